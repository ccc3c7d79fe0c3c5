"""Turns that only ask rank below statements in build_context (ContextConfig.question_penalty).

On LoCoMo, ~10 % of turns are mostly questions and ~2 % of the turns that hold an answer are;
question-shaped turns ranked high for a question and filled the context
(docs/measurements.md, "Issue 13, ninth session")."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest
from test_levers import T0, _msg, _Sources

from memstrata import Memory, Message, Role, Scope, ValidationError
from memstrata.context import builder
from memstrata.context.builder import ContextRequest, build
from memstrata.context.config import ContextConfig
from memstrata.context.question_turns import question_share
from memstrata.search.hit import SearchHit
from memstrata.tokens import count_tokens


@pytest.mark.parametrize(
    ("text", "share"),
    [
        ("Mochi. My niece picked it.", 0.0),
        ("What did you name it?", 1.0),
        ("Really?!", 1.0),
        ("你给它取了什么名字？", 1.0),
        ("", 0.0),
        ("Melanie: Wow! Did you hear any stories?", 25 / 30),
        # the speaker's name is not part of what was said
        ("Caroline: What happened?", 1.0),
        ("我们养了一只兔子！你猜它叫什么？", 7 / 16),
        # a question about oneself says something: it is not "only asking"
        ("Can you recommend a vet for my dog Max?", 0.0),
        ("Should I take the job in Lisbon?", 0.0),
        ("我该不该接受里斯本的工作？", 0.0),
        ("Did you hear? My sister moved to Lisbon.", 13 / 40),
        ("Mine broke. Did yours?", 10 / 22),
    ],
)
def test_question_share(text: str, share: float) -> None:
    assert question_share(text) == pytest.approx(share)


def _scores(cfg: ContextConfig) -> dict[str, float]:
    asks = _msg("q", "Did you go sailing with Anna last June?", T0)
    says = _msg("a", "We went sailing at dawn, the bay was calm.", T0)
    hits = [SearchHit(asks, 0.9, "messages", ("q",)), SearchHit(says, 0.8, "messages", ("a",))]
    ctx = build(
        _Sources(hits, [asks, says]),
        ContextRequest(Scope("t", "u"), "when did Anna go sailing?", 4000, 0.0, config=cfg),
        count_tokens,
    )
    return {it.record_id or "": it.score for it in ctx.items if it.block == "relevant"}


def test_a_turn_that_only_asks_ranks_below_a_statement() -> None:
    # answer_type_boost (on since session 34) would add 0.2 to "last June" for a "when"
    unboosted = ContextConfig(answer_type_boost=0.0)
    assert _scores(replace(unboosted, question_penalty=0.0)) == pytest.approx({"q": 0.9, "a": 0.8})
    penalised = _scores(unboosted)
    assert penalised["q"] == pytest.approx(0.9 - 0.3)
    assert penalised["a"] == pytest.approx(0.8)
    assert ContextConfig.before().question_penalty == 0.0


def test_question_penalty_is_checked() -> None:
    with pytest.raises(ValidationError, match="question_penalty"):
        ContextConfig(question_penalty=-0.1)


_WORDS = "sailing boat bay harbour wind dawn anchor rope island tide chart compass".split()


@pytest.mark.parametrize("budget", [300, 1000, 2000])
def test_lazy_decoding_gives_the_eager_context_with_question_turns(
    tmp_path: Any, budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The penalty only lowers scores, so decoding only what can be shown stays exact."""
    rnd = random.Random(7)
    mem = Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", background=False)
    try:
        alice = Scope("acme", "alice", session="s1")
        msgs = []
        for i in range(200):
            words = " ".join(rnd.choice(_WORDS) for _ in range(rnd.choice((2, 5, 12, 40))))
            end = rnd.choice(("?", ".", "? Really?", "!"))
            msgs.append(Message(role=Role.USER, content=f"turn {i}: {words}{end}"))
        mem.add_messages(alice, msgs)
        mem.flush()
        other = Scope("acme", "alice", session="s2")
        queries = ("sailing the boat at dawn?", "anchor rope", "which island did the tide show?")
        lazy = [mem.build_context(other, q, token_budget=budget) for q in queries]
        monkeypatch.setattr(builder.ContextRequest, "lazy", property(lambda self: False))
        eager = [mem.build_context(other, q, token_budget=budget) for q in queries]
        assert [[it.record_id for it in c.items] for c in lazy] == [
            [it.record_id for it in c.items] for c in eager
        ]
    finally:
        mem.close()
