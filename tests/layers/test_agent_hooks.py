"""AgentHooks (seed 000 §6) driving a real Memory and the layer services."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from memstrata import Memory, Scope
from memstrata.agent import AgentHooks
from memstrata.clock import FixedClock
from memstrata.filters import Filters
from memstrata.layers.base import LayerConfig, LayerContext
from memstrata.layers.episodic import EpisodeService
from memstrata.layers.procedural import ProceduralService
from memstrata.layers.working import TaskService
from memstrata.records import RecordType

ALICE = Scope("acme", "alice", session="s1")


@pytest.fixture
def hooks() -> Iterator[AgentHooks]:
    mem = Memory(
        "memory://", embedder="hashing", clock=FixedClock(datetime(2026, 1, 1, tzinfo=UTC))
    )
    ctx = LayerContext(mem.store, mem.embedder, mem.llm, mem.clock, LayerConfig())
    procedures = ProceduralService(ctx)
    episodes = EpisodeService(ctx)
    yield AgentHooks(
        mem, tasks=TaskService(ctx, episodes, procedures), episodes=episodes, procedures=procedures
    )
    mem.close()


def test_a_task_loop_fills_every_layer(hooks: AgentHooks) -> None:
    store = hooks._memory.store  # type: ignore[attr-defined]
    hooks.on_user_message(ALICE, "Chart last year's sales by region")
    start = hooks.on_task_start(ALICE, "Chart sales by region", ["fetch", "plot"])
    assert start.suggestion is None and start.warnings == []
    hooks.on_tool_result(ALICE, "sql", "x" * 900)
    hooks.on_step_complete(ALICE, 0, result="fetched")
    hooks.on_step_complete(ALICE, 1, error="plot library missing")
    hooks.on_assistant_message(ALICE, "The chart failed; the plotting library is missing.")
    done = hooks.on_task_complete(ALICE, success=False, outcome="no chart")
    data = done.task.content.structured
    assert [s["status"] for s in data["steps"]] == ["completed", "failed"]
    assert data["iteration"] == 2 and data["tools"] == ["sql"]
    assert len(data["notes"][0]) < 520 and data["notes"][0].endswith("…")
    roles = [
        m.role.value
        for m in store.list(
            ALICE, Filters(types=frozenset({RecordType.MESSAGE})), newest_first=False
        )
    ]
    assert roles == ["user", "tool", "assistant"]
    again = hooks.on_task_start(ALICE, "Chart sales by region for the board")
    assert [w.pattern for w in again.warnings] == ["Chart sales by region"]


def test_task_start_reuses_a_proven_plan(hooks: AgentHooks) -> None:
    for _ in range(2):
        hooks.on_task_start(ALICE, "Weekly report", ["gather", "write", "send"])
        hooks.on_task_complete(ALICE, success=True, outcome="sent")
    start = hooks.on_task_start(ALICE, "Weekly report")
    assert start.suggestion is not None
    assert start.task.content.structured["steps"][2]["description"] == "send"


class Sink:
    """A bare message sink: a memory with no layer services wired in."""

    def __init__(self) -> None:
        self.turns: list[tuple[str, str]] = []

    def add_message(self, scope: Scope, role: object, content: str) -> None:
        self.turns.append((str(role), content))


def test_hooks_without_a_task_service_say_what_is_missing() -> None:
    sink = Sink()
    hooks = AgentHooks(sink)
    hooks.on_tool_result(ALICE, "grep", "3 matches")  # no task service: just the turn
    assert sink.turns == [("tool", "[grep] 3 matches")]
    with pytest.raises(RuntimeError, match="needs a TaskService"):
        hooks.on_step_complete(ALICE, 0)
