"""A question about one of the people who spoke is answered by what that person said
(ContextConfig.speaker_penalty, context/speakers.py): the other speaker's turns, which call
the one asked about by name ("Thanks Nate!"), no longer crowd that person's own words out of
a small context (docs/measurements.md, "Issue 13, fifteenth session")."""

from __future__ import annotations

import random
from typing import Any

import pytest

from memstrata import Memory, Message, Role, Scope, ValidationError
from memstrata.context import builder
from memstrata.context.config import ContextConfig
from memstrata.context.speakers import named_speakers


@pytest.mark.parametrize(
    ("question", "speakers", "named"),
    [
        ("What recipes has Nate made?", {"Nate", "Joanna"}, {"Nate"}),
        ("How old are Nate's turtles?", {"Nate", "Joanna"}, {"Nate"}),
        ("What do Jon and Gina both have in common?", {"Jon", "Gina"}, {"Jon", "Gina"}),
        ("What is the weather like?", {"Jon", "Gina"}, set()),
        ("What did Natalie bake?", {"Nate", "Joanna"}, set()),  # a word, not a prefix
        ("Where does Caroline work?", {"Caroline Smith", "Mel"}, {"Caroline Smith"}),
        ("周涛养了什么宠物？", {"周涛", "郑浩"}, {"周涛"}),
        ("周涛和郑浩都喜欢什么运动？", {"周涛", "郑浩"}, {"周涛", "郑浩"}),
        # a name is matched as written: the month is not the speaker
        ("What did Jon do in may?", {"May", "Jon"}, {"Jon"}),
        ("", {"Jon", "Gina"}, set()),
    ],
)
def test_named_speakers(question: str, speakers: set[str], named: set[str]) -> None:
    assert named_speakers(question, speakers) == frozenset(named)


def test_config_is_checked() -> None:
    with pytest.raises(ValidationError, match="speaker_penalty"):
        ContextConfig(speaker_penalty=-0.1)
    assert ContextConfig.before().speaker_penalty == 0.0


def _chat(mem: Memory, scope: Scope) -> None:
    """Joanna calls Nate by name in short turns that share the question's words (BM25 ranks
    them high); Nate says what he cooks once, in a longer turn."""
    turns = [
        ("Nate", "Cooking update: coconut milk ice cream at home, with a chocolate swirl on top.")
    ]
    for i in range(12):
        turns.append(("Joanna", f"Cooking with you is fun, Nate ({i})!"))
        turns.append(("Joanna", f"The sky over the harbour was grey again ({i})."))
    mem.add_messages(
        scope,
        [Message(Role.USER, f"{who}: {text}", metadata={"speaker": who}) for who, text in turns],
    )
    mem.flush()


def _shown(mem: Memory, scope: Scope, question: str, budget: int) -> str:
    ctx = mem.build_context(scope, question, token_budget=budget, reserve_ratio=0.0)
    return "\n".join(m["content"] for m in ctx.messages[:-1])


def test_the_named_speakers_words_are_not_crowded_out() -> None:
    mem = Memory("memory://", embedder="hashing", background=False)
    try:
        scope = Scope("acme", "alice", session="s1")
        _chat(mem, scope)
        ask = Scope("acme", "alice", session="s2")
        question = "What has Nate been cooking?"
        mem.context_config = ContextConfig(speaker_penalty=0.0)
        before = mem.build_context(ask, question, token_budget=130, reserve_ratio=0.0)
        assert "coconut" not in "".join(it.text for it in before.items)
        mem.context_config = ContextConfig(speaker_penalty=1.0)
        after = mem.build_context(ask, question, token_budget=130, reserve_ratio=0.0)
        assert "coconut" in "".join(it.text for it in after.items)
        # the other speaker's turns lose exactly the penalty, the named one's keep their score
        old = {it.record_id: it.score for it in [*before.items, *before.dropped]}
        for it in [*after.items, *after.dropped]:
            expected = old[it.record_id] - (1.0 if it.text.startswith("Joanna:") else 0.0)
            assert it.score == pytest.approx(expected)
        # naming both speakers changes nothing
        both = "What have Nate and Joanna been cooking?"
        mem.context_config = ContextConfig(speaker_penalty=0.0)
        before = _shown(mem, ask, both, 130)
        mem.context_config = ContextConfig(speaker_penalty=1.0)
        assert _shown(mem, ask, both, 130) == before
    finally:
        mem.close()


def test_turns_without_a_speaker_are_not_affected() -> None:
    mem = Memory("memory://", embedder="hashing", background=False)
    try:
        scope = Scope("acme", "bob", session="s1")
        mem.add_messages(
            scope,
            [Message(Role.USER, "Nate made coconut ice cream.")]
            + [Message(Role.USER, f"Thanks Nate ({i})!") for i in range(8)],
        )
        mem.flush()
        ask = Scope("acme", "bob", session="s2")
        mem.context_config = ContextConfig(speaker_penalty=0.0)
        before = _shown(mem, ask, "What did Nate make?", 60)
        mem.context_config = ContextConfig(speaker_penalty=1.0)
        assert _shown(mem, ask, "What did Nate make?", 60) == before
    finally:
        mem.close()


_WORDS = "cook recipe turtle ice cream coconut swirl movie dance studio".split()


@pytest.mark.parametrize("budget", [300, 1000])
def test_lazy_decoding_gives_the_eager_context(
    tmp_path: Any, budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The penalty only lowers scores: candidates rendered from views (none decoded) give
    the context that decoding every one gives."""
    rnd = random.Random(15)
    mem = Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", background=False)
    try:
        scope = Scope("acme", "alice", session="s1")
        msgs = []
        for i in range(160):
            who = "Nate" if i % 2 else "Joanna"
            other = "Joanna" if i % 2 else "Nate"
            words = " ".join(rnd.choice(_WORDS) for _ in range(rnd.choice((3, 8, 20))))
            msgs.append(
                Message(Role.USER, f"{who}: {words}, {other} ({i}).", metadata={"speaker": who})
            )
        mem.add_messages(scope, msgs)
        mem.flush()
        mem.context_config = ContextConfig(speaker_penalty=0.3)
        ask = Scope("acme", "alice", session="s2")
        queries = ("What has Nate cooked?", "Which movie did Joanna like?", "coconut swirl")
        lazy = [mem.build_context(ask, q, token_budget=budget) for q in queries]
        monkeypatch.setattr(builder.ContextRequest, "lazy", property(lambda self: False))
        eager = [mem.build_context(ask, q, token_budget=budget) for q in queries]
        assert [[it.record_id for it in c.items] for c in lazy] == [
            [it.record_id for it in c.items] for c in eager
        ]
        assert [c.messages for c in lazy] == [c.messages for c in eager]
    finally:
        mem.close()
