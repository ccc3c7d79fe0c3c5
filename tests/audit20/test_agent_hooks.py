"""``AgentHooks.on_tool_result`` stored the tool turn and only then noted it in the task's
scratchpad, whose checks could refuse the note: a refused call that had written. A ``None``
tool or result raised ``TypeError`` (or was stored as "[None] ..."). Now both texts and
the note are checked before anything is stored."""

from __future__ import annotations

from typing import Any

import pytest

from memstrata import Memory, Scope, ValidationError
from memstrata.agent import AgentHooks
from robustness.conftest import snapshot

ALICE = Scope("acme", "alice", session="s1")


@pytest.mark.parametrize(
    ("tool", "result", "says"),
    [
        (None, "50 rows", "tool"),
        ("sql", None, "result"),
        ("sql", "rows", "error"),  # error="yes" below
        ("t" * 99_990, "50 rows of sales data", "note"),  # the note would be too long
        ("sq\x00l", "50 rows", "NUL"),
    ],
)
def test_a_refused_tool_result_stores_nothing(
    mem: Memory, tool: Any, result: Any, says: str
) -> None:
    hooks = AgentHooks(mem)
    hooks.on_task_start(ALICE, "chart last year's sales", ["fetch", "plot"])
    before = snapshot(mem, ALICE)
    with pytest.raises(ValidationError, match=says):
        hooks.on_tool_result(ALICE, tool, result, error="yes" if says == "error" else False)
    assert snapshot(mem, ALICE) == before


def test_an_empty_tool_result_is_still_a_turn(mem: Memory) -> None:
    hooks = AgentHooks(mem)
    hooks.on_task_start(ALICE, "chart last year's sales", ["fetch", "plot"])
    message = hooks.on_tool_result(ALICE, "sql", "")
    assert message.content.raw == "[sql] "
    assert mem.tasks.current(ALICE).content.structured["notes"][-1] == "sql: "


def test_the_goal_is_named_as_the_caller_knows_it(mem: Memory) -> None:
    with pytest.raises(ValidationError, match="^goal must be text"):
        AgentHooks(mem).on_task_start(ALICE, None)  # type: ignore[arg-type]
