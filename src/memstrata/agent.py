"""Agent-loop integration: the hooks of seed 000 §6 as one small helper.

An agent loop calls these at the obvious moments; each writes to the right layer::

    hooks = AgentHooks(mem, facts=..., tasks=..., episodes=..., procedures=...)
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

from dataclasses import dataclass, field
from typing import Any, Protocol

from .layers.episodic import EpisodeService
from .layers.procedural import FailureWarning, ProceduralService, Suggestion
from .layers.semantic import FactService
from .layers.working import StepStatus, TaskCompletion, TaskService
from .scope import Scope

__all__ = ["AgentHooks", "MessageSink", "TaskStart"]

_TOOL_NOTE_CHARS = 500  # rule compression of tool output (seed 000 §7)


class MessageSink(Protocol):
    def add_message(self, scope: Scope, role: Any, content: str) -> Any: ...


@dataclass(frozen=True, slots=True)
class TaskStart:
    task: Any  # the task record
    suggestion: Suggestion | None = None  # a proven decomposition, when one applies
    warnings: list[FailureWarning] = field(default_factory=list)


def _service(explicit: Any, memory: object, name: str) -> Any:
    return explicit if explicit is not None else getattr(memory, name, None)


class AgentHooks:
    def __init__(
        self,
        memory: MessageSink,
        *,
        tasks: TaskService | None = None,
        facts: FactService | None = None,
        episodes: EpisodeService | None = None,
        procedures: ProceduralService | None = None,
    ) -> None:
        self._memory = memory
        self.tasks: TaskService | None = _service(tasks, memory, "tasks")
        self.facts: FactService | None = _service(facts, memory, "facts")
        self.episodes: EpisodeService | None = _service(episodes, memory, "episodes")
        self.procedures: ProceduralService | None = _service(procedures, memory, "procedures")

    def _tasks(self) -> TaskService:
        if self.tasks is None:
            raise RuntimeError("AgentHooks needs a TaskService: pass tasks=TaskService(ctx)")
        return self.tasks

    def on_user_message(self, scope: Scope, content: str) -> Any:
        """Store the turn (short-term; facts and episodes follow from background jobs)."""
        return self._memory.add_message(scope, "user", content)

    def on_assistant_message(self, scope: Scope, content: str) -> Any:
        return self._memory.add_message(scope, "assistant", content)

    def on_tool_result(self, scope: Scope, tool: str, result: str, *, error: bool = False) -> Any:
        """Store the tool turn; note a truncated copy in the active task's scratchpad."""
        message = self._memory.add_message(scope, "tool", f"[{tool}] {result}")
        if self.tasks is not None and self.tasks.current(scope) is not None:
            short = result if len(result) <= _TOOL_NOTE_CHARS else result[:_TOOL_NOTE_CHARS] + "…"
            self.tasks.note(scope, f"{tool}{' error' if error else ''}: {short}", tool=tool)
        return message

    def on_step_complete(
        self, scope: Scope, index: int, *, result: str | None = None, error: str | None = None
    ) -> Any:
        """Mark step ``index`` completed (or failed when ``error`` is given); next iteration."""
        tasks = self._tasks()
        status = StepStatus.FAILED if error is not None else StepStatus.COMPLETED
        tasks.update_step(scope, index, status, result=result, error=error)
        return tasks.next_iteration(scope)

    def on_task_start(self, scope: Scope, goal: str, steps: list[str] | None = None) -> TaskStart:
        """Start the task; without a plan, reuse a proven decomposition when one applies;
        warn about matching failure patterns either way."""
        suggestion = warnings = None
        if self.procedures is not None:
            suggestion = self.procedures.suggest(scope, goal)
            warnings = self.procedures.warnings(scope, goal)
        plan = steps if steps is not None else (suggestion.subtasks if suggestion else [])
        task = self._tasks().start(scope, goal, plan)
        return TaskStart(task, suggestion, warnings or [])

    def on_task_complete(
        self, scope: Scope, *, success: bool, outcome: str, feedback: str = ""
    ) -> TaskCompletion:
        """Reflect, archive the task as an episode and update procedural memory."""
        return self._tasks().complete(scope, success, outcome, feedback)
