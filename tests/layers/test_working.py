"""Working memory: task state transitions, rendering, completion into episodic/procedural."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from memstrata.clock import FixedClock
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.errors import NotFoundError, ValidationError
from memstrata.filters import Filters
from memstrata.layers.base import LayerConfig, LayerContext
from memstrata.layers.working import StepStatus, TaskService, render
from memstrata.llm.base import Reflection, TaskOutcome
from memstrata.llm.chat import PromptedLLM
from memstrata.llm.fake import ScriptedChat
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.records import RecordType
from memstrata.scope import Scope
from memstrata.store import open_store

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
ALICE = Scope("acme", "alice", session="s1")


@pytest.fixture
def ctx() -> Iterator[LayerContext]:
    store = open_store("memory://")
    yield LayerContext(store, HashingEmbedder(), HeuristicLLM(), FixedClock(T0), LayerConfig())
    store.close()


def test_steps_notes_and_iterations_are_versions(ctx: LayerContext) -> None:
    tasks = TaskService(ctx)
    task = tasks.start(ALICE, "Chart the sales data", ["fetch data", "clean", "plot"])
    tasks.update_step(ALICE, 0, StepStatus.COMPLETED, result="50000 rows")
    tasks.update_step(ALICE, 1, "failed", error="15% missing values")
    tasks.note(ALICE, "use forward fill", tool="pandas")
    current = tasks.next_iteration(ALICE)
    assert current.id == task.id and current.version == 5
    assert [s["status"] for s in current.content.structured["steps"]] == [
        "completed",
        "failed",
        "pending",
    ]
    block = render(current)
    assert block.splitlines()[0] == "## Current Task State"
    assert "1. [x] fetch data → 50000 rows" in block
    assert "2. [!] clean ✗ 15% missing values" in block
    assert "3. [ ] plot" in block and "- use forward fill" in block
    assert "iteration 1" in block
    assert len(ctx.store.history(ALICE, task.id)) == 5


def test_step_index_out_of_range_names_the_valid_range(ctx: LayerContext) -> None:
    tasks = TaskService(ctx)
    tasks.start(ALICE, "two steps", ["a", "b"])
    with pytest.raises(ValidationError, match=r"out of range; valid: 0\.\.1"):
        tasks.update_step(ALICE, 2, "completed")
    with pytest.raises(ValidationError, match="out of range"):
        tasks.update_step(ALICE, -1, "completed")
    with pytest.raises(ValidationError, match="not one of"):
        tasks.update_step(ALICE, 0, "banana")


def test_one_active_task_per_session(ctx: LayerContext) -> None:
    tasks = TaskService(ctx)
    first = tasks.start(ALICE, "first")
    second = tasks.start(ALICE, "second")
    current = tasks.current(ALICE)
    assert current is not None and current.id == second.id
    assert ctx.store.get(ALICE, first.id).content.structured["status"] == "abandoned"
    assert tasks.current(ALICE.with_session("s2")) is None
    with pytest.raises(NotFoundError):
        tasks.note(ALICE.with_session("s2"), "no task here")


def test_completion_with_garbage_reflection_falls_back_to_the_heuristic(ctx: LayerContext) -> None:
    chat = ScriptedChat("this is not JSON", "{still: not json")
    c = LayerContext(ctx.store, ctx.embedder, PromptedLLM(chat), ctx.clock, ctx.config)
    tasks = TaskService(c)
    task = tasks.start(ALICE, "Chart the sales data", ["fetch data", "plot"])
    done = tasks.complete(ALICE, True, "chart delivered", feedback="Use blue next time")
    assert chat.remaining == 0
    expected = HeuristicLLM().reflect(
        TaskOutcome(
            goal="Chart the sales data",
            steps=["fetch data", "plot"],
            step_statuses=["pending", "pending"],
            outcome="chart delivered",
            feedback="Use blue next time",
        )
    )
    assert done.reflection == expected
    assert done.episode.content.structured["lessons"] == expected.lessons
    assert done.episode.source_ids == (task.id,) and done.episode.importance == 0.65
    assert done.task.content.structured["status"] == "completed"
    assert done.task.content.structured["episode_id"] == done.episode.id
    assert tasks.current(ALICE) is None
    assert ctx.store.get(ALICE, task.id).is_active  # closed, not deleted
    kinds = sorted(
        r.content.structured["kind"]
        for r in ctx.store.list(ALICE, Filters(types=frozenset({RecordType.EPISODE})))
    )
    assert kinds == ["feedback", "task"]
    assert [p.content.structured["kind"] for p in done.patterns] == ["decomposition"]


class ScriptedReflection(HeuristicLLM):
    def reflect(self, task: TaskOutcome) -> Reflection:
        return Reflection(
            summary="LLM summary", lessons=["clean before aggregating"], importance=0.8
        )


def test_failed_task_writes_a_failure_pattern(ctx: LayerContext) -> None:
    c = LayerContext(ctx.store, ctx.embedder, ScriptedReflection(), ctx.clock, ctx.config)
    tasks = TaskService(c)
    tasks.start(ALICE, "Aggregate quarterly revenue", ["sum", "report"])
    done = tasks.complete(ALICE, False, "numbers were wrong")
    assert done.reflection.summary == "LLM summary"
    assert done.task.content.structured["status"] == "failed"
    kinds = [p.content.structured["kind"] for p in done.patterns]
    assert kinds == ["decomposition", "failure"]
    failure = done.patterns[1].content.structured
    assert failure["mitigation"] == "clean before aggregating" and failure["severity"] == 4
