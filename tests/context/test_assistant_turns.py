"""An assistant's long replies do not crowd the user's own words out of the context
(ContextConfig.assistant_penalty, context/roles.py) and long turns are shown as the sentences
that matter (ContextConfig.trim_turns_over, context/trim.py).

On the user ↔ assistant synthetic set (`bench convo --style assistant`), replies of 100–300
tokens sharing the question's words filled a 1,000-token context and pushed out the short
request that held the answer (docs/measurements.md, "Issue 13, tenth session")."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from memstrata import Memory, Message, Role, Scope, ValidationError
from memstrata.context import builder
from memstrata.context.config import ContextConfig
from memstrata.context.roles import addresses_assistant
from memstrata.context.trim import trim_turn
from memstrata.search.tokenize import tokenize


@pytest.mark.parametrize(
    ("question", "addressed"),
    [
        ("Which novel did you recommend for my flight?", True),
        ("What name did you suggest for my bakery?", True),
        ("Is your favourite colour blue?", True),
        ("你推荐我在飞机上读哪本小说？", True),
        ("我去南京的时候，你建议我住在哪一片？", True),
        ("What is my dog's name?", False),
        ("When did Caroline go to the support group?", False),
        # "you" that only makes the question a request asks about the user
        ("Can you remind me what my dog is called?", False),
        ("Do you remember what diet I follow?", False),
        ("Could you tell me which company I work for now?", False),
        ("你还记得我家小狗叫什么名字吗？", False),
        ("你能提醒我一下我现在住在哪个城市吗？", False),
        ("Can you remind me which novel you recommended?", True),
        ("你还记得你推荐的那本书吗？", True),
        # no "you": asked about what the assistant said all the same
        ("Which novel was recommended to me for the flight?", True),
        ("What name did the assistant suggest for my bakery?", True),
        ("Can you remind me what was suggested to me for the bakery's name?", True),
        ("助手推荐了哪本小说？", True),
        ("推荐给我的是哪本小说？", True),
        ("What did my doctor say about my diet?", False),
        ("Which city do I live in now?", False),
        ("What did John find hard about becoming assistant manager?", False),
        ("How did the assistant manager help Maria?", False),
    ],
)
def test_addresses_assistant(question: str, addressed: bool) -> None:
    assert addresses_assistant(question) is addressed


def test_trim_keeps_the_sentences_sharing_a_term_in_order() -> None:
    text = (
        "Great question. Vets see a turtle within a day. Bring its records. "
        "A calm voice helps at the vet. Let me know how it goes."
    )
    terms = set(tokenize("When should my turtle see the vet?"))
    assert trim_turn(text, terms, tokenize) == (
        "… Vets see a turtle within a day. … A calm voice helps at the vet. …"
    )
    # nothing shared (or everything shared): the turn stays whole
    assert trim_turn(text, set(tokenize("sailing")), tokenize) == text
    assert trim_turn("The vet. The turtle.", terms, tokenize) == "The vet. The turtle."
    assert trim_turn(text, set(), tokenize) == text


def test_trim_chinese() -> None:
    text = "好问题。乌龟一两天内就能看诊。带上记录。看兽医时声音要温柔。"
    terms = set(tokenize("我家乌龟什么时候看兽医？"))
    assert trim_turn(text, terms, tokenize) == "…乌龟一两天内就能看诊。…看兽医时声音要温柔。"


def test_config_is_checked() -> None:
    with pytest.raises(ValidationError, match="assistant_penalty"):
        ContextConfig(assistant_penalty=-1.0)
    with pytest.raises(ValidationError, match="trim_turns_over"):
        ContextConfig(trim_turns_over=-5)
    assert ContextConfig.before().assistant_penalty == 0.0
    assert ContextConfig.before().trim_turns_over == 0


_ADVICE = (
    "Ask other turtle owners nearby which clinic they trust and why. "
    "A calm name said softly helps during the exam. "
    "Write down when the symptoms started so the vet has a clear picture. "
    "Keep your turtle's records in one place for every visit. "
    "Regular check-ups matter more than most owners think. "
    "Many clinics offer a first check-up at a lower price for new animals. "
)


def _chat(mem: Memory, scope: Scope) -> None:
    msgs = [
        Message(
            Role.USER,
            "Can you recommend a vet? My turtle Luna is 3 and keeps scratching his shell on the "
            "rocks of the tank every evening, and he has stopped eating his greens.",
        ),
        Message(Role.ASSISTANT, "Sure. " + _ADVICE + "For a vet, I'd suggest Harbor Clinic."),
    ]
    for i in range(8):
        msgs.append(Message(Role.USER, f"Thanks, that helps (part {i})."))
        msgs.append(Message(Role.ASSISTANT, f"Of course (part {i}). " + _ADVICE))
    mem.add_messages(scope, msgs)
    mem.flush()


# 180: what the turns just fit in, as tokens.py estimates them (the eight short thanks,
# then the long reply or the turtle turn, not both)
def _shown(mem: Memory, scope: Scope, question: str, budget: int = 180) -> str:
    ctx = mem.build_context(scope, question, token_budget=budget, reserve_ratio=0.0)
    return "\n".join(m["content"] for m in ctx.messages[:-1])


def test_the_users_words_are_not_crowded_out_by_long_replies() -> None:
    mem = Memory("memory://", embedder="hashing", background=False)
    try:
        scope = Scope("acme", "alice", session="s1")
        _chat(mem, scope)
        ask = Scope("acme", "alice", session="s2")
        # before (answer_type_boost, on since session 34, lifts the turn naming Luna too)
        mem.context_config = ContextConfig(assistant_penalty=0.0, answer_type_boost=0.0)
        assert "Luna" not in _shown(mem, ask, "What is my turtle's name?")
        mem.context_config = ContextConfig(assistant_penalty=1.0)
        assert "Luna" in _shown(mem, ask, "What is my turtle's name?")
        # a question to the assistant about what it said keeps its replies in the running
        assert "Harbor Clinic" in _shown(mem, ask, "Which vet did you suggest for my turtle?")
        # and so does one about what it said that has no "you"
        assert "Harbor Clinic" in _shown(mem, ask, "Which vet was suggested to me for my turtle?")
    finally:
        mem.close()


def test_turns_stored_as_the_users_are_not_affected() -> None:
    """A chat between two people is stored as the user's turns: nothing changes."""
    mem = Memory("memory://", embedder="hashing", background=False)
    try:
        scope = Scope("acme", "bob", session="s1")
        msgs = [
            Message(Role.USER, f"Jo: {t}")
            for t in ("My turtle Luna is 3.", _ADVICE, _ADVICE, "Ha, nice.")
        ]
        mem.add_messages(scope, msgs)
        mem.flush()
        ask = Scope("acme", "bob", session="s2")
        mem.context_config = ContextConfig(assistant_penalty=0.0)
        before = _shown(mem, ask, "What is Jo's turtle called?", 120)
        mem.context_config = ContextConfig(assistant_penalty=1.0)
        assert _shown(mem, ask, "What is Jo's turtle called?", 120) == before
    finally:
        mem.close()


def test_a_long_reply_is_shown_as_its_sentences_that_matter() -> None:
    mem = Memory("memory://", embedder="hashing", background=False)
    try:
        scope = Scope("acme", "carol", session="s1")
        _chat(mem, scope)
        ask = Scope("acme", "carol", session="s2")
        mem.context_config = ContextConfig(trim_turns_over=40)
        shown = _shown(mem, ask, "When should my turtle see a vet?", 2000)
        assert "… " in shown and "Regular check-ups matter" not in shown
        assert "My turtle Luna is 3" in shown  # a short turn is never cut
        # asked about what the assistant said, its replies stay whole
        whole = _shown(mem, ask, "Which vet did you suggest for my turtle?", 2000)
        assert "I'd suggest Harbor Clinic" in whole and "Regular check-ups matter" in whole
    finally:
        mem.close()


def test_a_long_turn_of_the_user_is_never_cut() -> None:
    mem = Memory("memory://", embedder="hashing", background=False)
    try:
        scope = Scope("acme", "dan", session="s1")
        mem.add_messages(scope, [Message(Role.USER, _ADVICE * 2)])
        mem.flush()
        mem.context_config = ContextConfig(trim_turns_over=20)
        shown = _shown(
            mem, Scope("acme", "dan", session="s2"), "When should my turtle see a vet?", 2000
        )
        assert "Regular check-ups matter" in shown and "…" not in shown
    finally:
        mem.close()


_WORDS = "vet turtle clinic name records exam calm visit price owners".split()


@pytest.mark.parametrize("budget", [300, 1000])
def test_lazy_decoding_gives_the_eager_context_with_both_levers(
    tmp_path: Any, budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Candidates rendered from views (none decoded) give the context that decoding every
    one gives, with the penalty and long replies cut (tests/context/test_lazy_decode.py
    checks the whole context on every backend)."""
    rnd = random.Random(11)
    mem = Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", background=False)
    try:
        alice = Scope("acme", "alice", session="s1")
        msgs = []
        for i in range(160):
            n = rnd.choice((3, 8, 60, 120))
            words = ". ".join(
                " ".join(rnd.choice(_WORDS) for _ in range(6)) for _ in range(max(1, n // 6))
            )
            role = Role.ASSISTANT if i % 2 else Role.USER
            msgs.append(Message(role=role, content=f"turn {i}: {words}."))
        mem.add_messages(alice, msgs)
        mem.flush()
        mem.context_config = replace(ContextConfig(), assistant_penalty=0.5, trim_turns_over=40)
        other = Scope("acme", "alice", session="s2")
        queries = ("what is my turtle's name?", "which clinic did you suggest?", "exam price")
        lazy = [mem.build_context(other, q, token_budget=budget) for q in queries]
        monkeypatch.setattr(builder.ContextRequest, "lazy", property(lambda self: False))
        eager = [mem.build_context(other, q, token_budget=budget) for q in queries]
        assert [[it.record_id for it in c.items] for c in lazy] == [
            [it.record_id for it in c.items] for c in eager
        ]
        assert [c.messages for c in lazy] == [c.messages for c in eager]
    finally:
        mem.close()
