"""Procedural memory: reuse thresholds (similarity > 0.8, success rate > 0.9), warnings."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from memstrata.clock import FixedClock
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.layers.base import LayerConfig, LayerContext
from memstrata.layers.procedural import (
    ProceduralService,
    indicators_match,
    should_reuse,
    success_rate,
)
from memstrata.llm.base import Reflection, TaskOutcome
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.scope import Scope
from memstrata.store import open_store

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
ALICE = Scope("acme", "alice", session="s1")
GOAL = "Optimise the API performance"
STEPS = ["profile endpoints", "add caching", "load test"]


@pytest.fixture
def ctx() -> Iterator[LayerContext]:
    store = open_store("sqlite://:memory:")
    yield LayerContext(store, HashingEmbedder(), HeuristicLLM(), FixedClock(T0), LayerConfig())
    store.close()


def test_should_reuse_thresholds_are_strict() -> None:
    assert should_reuse(0.81, 0.91)
    assert not should_reuse(0.8, 0.95)
    assert not should_reuse(0.95, 0.9)
    assert success_rate(9, 10) == 0.9 and success_rate(0, 0) == 0.0


def test_indicators_match_words_and_chinese() -> None:
    assert indicators_match("Please do it quickly, it is urgent", ["quickly", "asap"]) == [
        "quickly"
    ]
    assert indicators_match("quicklyish", ["quickly"]) == []
    assert indicators_match("这个任务很紧急，尽快完成", ["紧急", "马上"]) == ["紧急"]


def _run(procedures: ProceduralService, success: bool) -> None:
    procedures.learn(
        ALICE,
        TaskOutcome(goal=GOAL, steps=STEPS, success=success),
        Reflection(summary="s", lessons=["go serial"], importance=0.6),
    )


def test_suggest_needs_a_reliable_pattern(ctx: LayerContext) -> None:
    procedures = ProceduralService(ctx)
    for _ in range(9):
        _run(procedures, True)
    _run(procedures, False)  # 9/10 = 0.9: not > 0.9
    assert procedures.suggest(ALICE, GOAL) is None
    _run(procedures, True)  # 10/11 > 0.9
    suggestion = procedures.suggest(ALICE.with_session("s2"), GOAL)
    assert suggestion is not None and suggestion.subtasks == STEPS
    assert suggestion.confidence == pytest.approx(10 / 11)
    assert suggestion.pattern.content.structured["usage_count"] == 11
    assert procedures.suggest(ALICE, "Bake a chocolate cake for the party") is None


def test_failure_patterns_warn_on_matching_indicators(ctx: LayerContext) -> None:
    procedures = ProceduralService(ctx)
    procedures.add_failure_pattern(
        ALICE,
        "rate_limit",
        ["quickly", "urgent", "asap"],
        "Run the calls serially to avoid rate limits",
        severity=4,
    )
    _run(procedures, False)
    warnings = procedures.warnings(ALICE, "Fetch all pages quickly please")
    assert [(w.pattern, w.matched, w.severity) for w in warnings] == [
        ("rate_limit", ["quickly"], 4)
    ]
    learned = procedures.warnings(ALICE, "the API performance is bad again")
    assert [w.pattern for w in learned] == [GOAL]
    assert procedures.warnings(ALICE, "write a poem") == []
