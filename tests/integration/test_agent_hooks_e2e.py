"""``AgentHooks`` over a real Memory on SQLite: task start → tool results → steps → complete,
then a new Memory on the same file sees the archived episode, the procedure and the turns."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from memstrata import FixedClock, Memory, Scope
from memstrata.agent import AgentHooks
from memstrata.filters import Filters
from memstrata.records import RecordType

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
SCOPE = Scope("acme", "dana", session="d1")
GOAL = "Chart last year's sales by region"


def open_mem(path: Path, clock: FixedClock) -> Memory:
    return Memory(
        f"sqlite:///{path}", embedder="hashing", llm="heuristic", clock=clock, background=False
    )


def test_a_task_through_the_hooks_lands_in_every_layer(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    clock = FixedClock(T0)
    mem = open_mem(path, clock)
    try:
        hooks = AgentHooks(mem)
        hooks.on_user_message(SCOPE, f"{GOAL}, please. I prefer bar charts.")
        start = hooks.on_task_start(SCOPE, GOAL, ["query the sales table", "draw the chart"])
        assert start.suggestion is None and start.warnings == []
        assert mem.tasks.current(SCOPE) is not None

        hooks.on_tool_result(SCOPE, "sql", "region,total\n" + "north,100\n" * 200)
        state = hooks.on_step_complete(SCOPE, 0, result="4 regions fetched")
        steps = state.content.structured["steps"]
        assert [s["status"] for s in steps] == ["completed", "pending"]
        assert steps[0]["result"] == "4 regions fetched"
        notes = state.content.structured["notes"]
        assert len(notes) == 1 and notes[0].startswith("sql: region,total")
        assert len(notes[0]) < 600  # the 5 kB tool output was truncated in the scratchpad

        # the task state is in the context while the task runs
        ctx = mem.build_context(SCOPE, "what is the current step?", 4000)
        working = [it for it in ctx.items if it.layer == "working"]
        assert len(working) == 1 and GOAL in working[0].text
        assert "4 regions fetched" in working[0].text

        hooks.on_step_complete(SCOPE, 1, result="bar chart drawn")
        hooks.on_assistant_message(SCOPE, "Here is the bar chart of sales by region.")
        done = hooks.on_task_complete(
            SCOPE,
            success=True,
            outcome="chart delivered",
            feedback="Great chart, exactly what I needed!",
        )
        assert done.task.content.structured["success"] is True
        assert done.episode.type is RecordType.EPISODE
        assert mem.tasks.current(SCOPE) is None
        report = mem.end_session(SCOPE)
        assert report.failed == 0 and report.retried == 0, report.errors
        turns = mem.list(
            SCOPE,
            filters=Filters(types=frozenset({RecordType.MESSAGE})),
            limit=100,
            newest_first=False,
        )
        assert [t.role.value if t.role else None for t in turns] == ["user", "tool", "assistant"]
        episode_id = done.episode.id
    finally:
        mem.close()

    mem = open_mem(path, clock)
    try:
        later = SCOPE.with_session("d2")
        # the archived task is recalled by the episodic layer in a later session (episodes
        # are stored under the session they ended in: recall over the user's scope)
        hits = mem.episodes.recall(later.user_scope, "sales chart by region")
        assert episode_id in [h.record.id for h in hits]
        feedback = [
            h
            for h in mem.episodes.recall(later.user_scope, "great chart", k=10)
            if h.record.content.structured.get("kind") == "feedback"
        ]
        assert feedback and feedback[0].record.importance == 0.9
        # no running task leaks into the new session's context
        ctx = mem.build_context(later, "how did we chart the sales last time?", 4000)
        assert not [it for it in ctx.items if it.layer == "working"]
        assert "chart" in ctx.text
        # the preference stated in the first turn became a profile fact
        assert any(f.content.structured["key"].startswith("prefers_") for f in mem.facts.all(later))
    finally:
        mem.close()
