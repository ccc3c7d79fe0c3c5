"""Agent-loop integration: the hooks of seed 000 §6 as one small helper.

An agent loop calls these at the obvious moments; each writes to the right layer::

    hooks = AsyncAgentHooks(mem, facts=..., tasks=..., episodes=..., procedures=...)
    hooks.on_user_message(scope, "Chart last year's sales")
    start = hooks.on_task_start(scope, "Chart last year's sales")   # + reuse, warnings
    hooks.on_tool_result(scope, "sql", "50000 rows")
    hooks.on_step_complete(scope, 0, result="data fetched")
    hooks.on_assistant_message(scope, "Here is the chart.")
    hooks.on_task_complete(scope, success=True, outcome="chart delivered")

``memory`` only needs ``add_message(scope, role, content)``; the layer services are passed
explicitly, or taken from ``memory.facts`` / ``memory.tasks`` / ``memory.episodes`` /
``memory.procedures`` when it has them.
"""

from __future__ import annotations

import sys
from typing import Any, Protocol

from memstrata._async.layers.episodic import AsyncEpisodeService
from memstrata._async.layers.procedural import AsyncProceduralService
from memstrata._async.layers.semantic import AsyncFactService
from memstrata._async.layers.working import AsyncTaskService
from memstrata.agent_types import TaskStart
from memstrata.layers.working import StepStatus, TaskCompletion
from memstrata.scope import Scope
from memstrata.text import validate_content
from memstrata.validation import check_bool, check_text

__all__ = ["AsyncAgentHooks", "AsyncMessageSink", "TaskStart"]

_TOOL_NOTE_CHARS = 500  # rule compression of tool output (seed 000 §7)


class AsyncMessageSink(Protocol):
    async def add_message(self, scope: Scope, role: Any, content: str) -> Any: ...


def _service(explicit: Any, memory: object, name: str) -> Any:
    return explicit if explicit is not None else getattr(memory, name, None)


class AsyncAgentHooks:
    def __init__(
        self,
        memory: AsyncMessageSink,
        *,
        tasks: AsyncTaskService | None = None,
        facts: AsyncFactService | None = None,
        episodes: AsyncEpisodeService | None = None,
        procedures: AsyncProceduralService | None = None,
    ) -> None:
        self._memory = memory
        self.tasks: AsyncTaskService | None = _service(tasks, memory, "tasks")
        self.facts: AsyncFactService | None = _service(facts, memory, "facts")
        self.episodes: AsyncEpisodeService | None = _service(episodes, memory, "episodes")
        self.procedures: AsyncProceduralService | None = _service(procedures, memory, "procedures")

    def _tasks(self) -> AsyncTaskService:
        if self.tasks is None:
            raise RuntimeError(
                "AsyncAgentHooks needs a AsyncTaskService: pass tasks=AsyncTaskService(ctx)"
            )
        return self.tasks

    async def on_user_message(self, scope: Scope, content: str) -> Any:
        """Store the turn (short-term; facts and episodes follow from background jobs)."""
        return await self._memory.add_message(scope, "user", content)

    async def on_assistant_message(self, scope: Scope, content: str) -> Any:
        return await self._memory.add_message(scope, "assistant", content)

    async def on_tool_result(
        self, scope: Scope, tool: str, result: str, *, error: bool = False
    ) -> Any:
        """Store the tool turn; note a truncated copy in the active task's scratchpad."""
        # Both texts checked before the turn is stored: a refused note must not follow a
        # stored turn (and a None tool or result is an error, not "[None] None").
        tool = validate_content(tool, field="tool")
        # (its length is the memory's to check, by its max_content_chars)
        result = check_text(result, "result", allow_empty=True, max_chars=sys.maxsize)
        check_bool(error, "error")
        short = result if len(result) <= _TOOL_NOTE_CHARS else result[:_TOOL_NOTE_CHARS] + "…"
        note = validate_content(f"{tool}{' error' if error else ''}: {short}", field="note")
        message = await self._memory.add_message(scope, "tool", f"[{tool}] {result}")
        if self.tasks is not None and await self.tasks.current(scope) is not None:
            await self.tasks.note(scope, note, tool=tool)
        return message

    async def on_step_complete(
        self, scope: Scope, index: int, *, result: str | None = None, error: str | None = None
    ) -> Any:
        """Mark step ``index`` completed (or failed when ``error`` is given); next iteration."""
        tasks = self._tasks()
        status = StepStatus.FAILED if error is not None else StepStatus.COMPLETED
        await tasks.update_step(scope, index, status, result=result, error=error)
        return await tasks.next_iteration(scope)

    async def on_task_start(
        self, scope: Scope, goal: str, steps: list[str] | None = None
    ) -> TaskStart:
        """Start the task; without a plan, reuse a proven decomposition when one applies;
        warn about matching failure patterns either way."""
        suggestion = warnings = None
        goal = validate_content(goal, field="goal")  # named as the caller knows it
        if self.procedures is not None:
            suggestion = await self.procedures.suggest(scope, goal)
            warnings = await self.procedures.warnings(scope, goal)
        plan = steps if steps is not None else (suggestion.subtasks if suggestion else [])
        task = await self._tasks().start(scope, goal, plan)
        return TaskStart(task, suggestion, warnings or [])

    async def on_task_complete(
        self, scope: Scope, *, success: bool, outcome: str, feedback: str = ""
    ) -> TaskCompletion:
        """Reflect, archive the task as an episode and update procedural memory."""
        return await self._tasks().complete(scope, success, outcome, feedback)
