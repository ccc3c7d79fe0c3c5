"""``answer_type_boost`` is on by default (0.2; docs/measurements.md, "Session 34"): with
a name said alone read as a name, it helped or tied on LoCoMo's held-out half and on both
synthetic sets. A turn that names the pet asked about gains it like the distractors that
name other pets, instead of falling below them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memstrata import Memory, Message, Role, Scope
from memstrata.context.config import ContextConfig

_T0 = datetime(2023, 10, 20, 18, 0, tzinfo=UTC)

_TURNS = [
    ("Noor", "Big news: we adopted a rabbit this weekend!"),
    ("Oscar", "No way, that's lovely! What did you name it?"),
    ("Noor", "Mochi. My niece picked it."),
    ("Oscar", "My sister's rabbit is called Noodle, she sent me photos."),
    ("Noor", "My turtles love strawberries."),
]


def test_answer_type_boost_is_on_by_default() -> None:
    assert ContextConfig().answer_type_boost == 0.2
    assert ContextConfig.before().answer_type_boost == 0.0


def _scores(config: ContextConfig) -> dict[str, float]:
    mem = Memory("memory://", embedder="hashing", background=False)
    try:
        mem.context_config = config
        written = mem.add_messages(
            Scope("t", "noor", session="s1"),
            [
                Message(
                    role=Role.USER,
                    content=f"{who}: {text}",
                    metadata={"speaker": who},
                    observed_at=_T0 + timedelta(seconds=10 * i),
                )
                for i, (who, text) in enumerate(_TURNS)
            ],
        )
        ctx = mem.build_context(
            Scope("t", "noor"),
            "What did Noor call the rabbit they adopted?",
            token_budget=2000,
            reserve_ratio=0,
        )
        stored = {rec.id: rec.text for rec in written}
        return {stored[it.record_id or ""]: it.score for it in ctx.items if it.block == "relevant"}
    finally:
        mem.close()


def test_a_name_said_alone_gains_the_boost_like_a_named_distractor() -> None:
    off = _scores(ContextConfig(answer_type_boost=0.0))
    on = _scores(ContextConfig())
    assert off.keys() == on.keys() == {f"{who}: {text}" for who, text in _TURNS}
    boosted = {text for text in on if on[text] == pytest.approx(off[text] + 0.2, abs=1e-6)}
    assert boosted == {"Noor: Mochi. My niece picked it.", _said(3)}
    for text in on.keys() - boosted:
        assert on[text] == pytest.approx(off[text], abs=1e-6)


def _said(i: int) -> str:
    return f"{_TURNS[i][0]}: {_TURNS[i][1]}"
