"""A long turn that answers the question in one of its sentences is not diluted by the rest
of what it says (ContextConfig.sentence_boost, context/sentence_match.py; opt-in:
docs/measurements.md, "Session 32")."""

from __future__ import annotations

import random
from typing import Any

import pytest

from memstrata import Memory, Message, Role, Scope, ValidationError
from memstrata.context import builder
from memstrata.context.config import ContextConfig
from memstrata.context.sentence_match import best_sentence_share
from memstrata.search.tokenize import tokenize


def _terms(text: str) -> frozenset[str]:
    return frozenset(tokenize(text))


@pytest.mark.parametrize(
    ("text", "question", "share"),
    [
        (
            "Hey Joanna! Hope you're well. I was in the final of a Valorant tournament, and I won!",
            "Which tournament did Nate win?",
            1 / 3,  # tournament (won is not win's stem); Nate is not said
        ),
        ("Nate won the tournament. Nate is happy.", "Which tournament did Nate win?", 2 / 3),
        ("The weather was grey.", "Which tournament did Nate win?", 0.0),
        ("周涛周末去打网球了。他很开心。", "周涛喜欢什么运动？", 1 / 3),
        ("anything", "", 0.0),  # a question with no term
        ("", "Which tournament?", 0.0),
    ],
)
def test_best_sentence_share(text: str, question: str, share: float) -> None:
    assert best_sentence_share(text, _terms(question), _terms) == pytest.approx(share)


def test_the_best_sentence_counts_not_the_whole_turn() -> None:
    """Terms spread over two sentences count as the better of the two, not their sum."""
    q = _terms("coconut ice cream recipe")
    spread = "I bought coconut. Later I ate ice cream."
    together = "My coconut ice cream recipe is ready."
    assert best_sentence_share(spread, q, _terms) < best_sentence_share(together, q, _terms)


def test_config_is_checked() -> None:
    with pytest.raises(ValidationError, match="sentence_boost"):
        ContextConfig(sentence_boost=-0.1)
    assert ContextConfig().sentence_boost == 0.0


def test_a_turns_score_rises_by_its_best_sentences_share() -> None:
    mem = Memory("memory://", embedder="hashing", background=False)
    try:
        scope = Scope("acme", "alice", session="s1")
        mem.add_messages(
            scope,
            [
                Message(
                    Role.USER,
                    "Hi there! Long week. My coconut ice cream recipe finally worked, by the way.",
                ),
                Message(Role.USER, "Coconut trees grow by the sea."),
                Message(Role.USER, "Ice cream is cold."),
            ],
        )
        mem.flush()
        ask = Scope("acme", "alice", session="s2")
        question = "coconut ice cream recipe"
        asked = _terms(question)
        mem.context_config = ContextConfig(sentence_boost=0.0)
        before = mem.build_context(ask, question, token_budget=2000, reserve_ratio=0.0)
        old = {it.record_id: (it.score, it.text) for it in before.items if it.block == "relevant"}
        assert len(old) == 3
        mem.context_config = ContextConfig(sentence_boost=0.5)
        after = mem.build_context(ask, question, token_budget=2000, reserve_ratio=0.0)
        for it in after.items:
            if it.record_id in old:
                score, text = old[it.record_id]
                share = best_sentence_share(text, asked, _terms)
                assert share > 0
                assert it.score == pytest.approx(score + 0.5 * share)
    finally:
        mem.close()


_WORDS = "cook recipe turtle ice cream coconut swirl movie dance studio".split()


@pytest.mark.parametrize("budget", [300, 1000])
def test_lazy_decoding_gives_the_eager_context(
    tmp_path: Any, budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Candidates rendered from views (none decoded) give the context that decoding every
    one gives, with the boost on."""
    rnd = random.Random(32)
    mem = Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", background=False)
    try:
        scope = Scope("acme", "alice", session="s1")
        msgs = []
        for i in range(160):
            parts = [
                " ".join(rnd.choice(_WORDS) for _ in range(rnd.choice((3, 8))))
                for _ in range(rnd.choice((1, 2, 4)))
            ]
            msgs.append(Message(Role.USER, ". ".join(parts) + f" ({i})."))
        mem.add_messages(scope, msgs)
        mem.flush()
        mem.context_config = ContextConfig(sentence_boost=0.3)
        ask = Scope("acme", "alice", session="s2")
        queries = ("What has been cooked?", "coconut swirl recipe", "dance studio movie")
        lazy = [mem.build_context(ask, q, token_budget=budget) for q in queries]
        monkeypatch.setattr(builder.ContextRequest, "lazy", property(lambda self: False))
        eager = [mem.build_context(ask, q, token_budget=budget) for q in queries]
        for a, b in zip(lazy, eager, strict=True):
            assert a.messages == b.messages
    finally:
        mem.close()
