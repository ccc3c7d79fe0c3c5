"""Working memory: the state of the current task (seed 000 L2).

One active ``TASK`` record per session holds the goal, the plan's steps (each with status
pending / in_progress / completed / failed and a result or error), scratchpad notes and an
iteration counter. Every change is a new version written against the version read
(optimistic locking), so concurrent writers get a ``ConflictError`` instead of a silent
overwrite. :func:`render` shows the task as the "Current Task State" block of the context.
When the task completes it is reflected on, archived as a task episode, taught to
procedural memory, and closed (kept, with its final status).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from ..errors import NotFoundError, ValidationError
from ..llm.base import Reflection, TaskOutcome
from ..llm.heuristic import HeuristicLLM
from ..records import MemoryRecord, RecordType
from ..scope import Scope
from ._build import build_record, list_records
from .base import LayerContext
from .episodic import EpisodeService
from .procedural import ProceduralService

__all__ = [
    "STEP_STATUS_ALIASES",
    "StepStatus",
    "TaskCompletion",
    "TaskService",
    "parse_step_status",
    "render",
]


log = logging.getLogger(__name__)
_MAX_NOTES = 50  # the scratchpad keeps the newest notes; older ones stay in history


class StepStatus(StrEnum):
    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    FAILED = "failed"


# Words agents and people use for a step's state, mapped to the four statuses.
STEP_STATUS_ALIASES: Mapping[str, str] = {
    "todo": "pending",
    "open": "pending",
    "not_started": "pending",
    "doing": "in_progress",
    "started": "in_progress",
    "running": "in_progress",
    "in-progress": "in_progress",
    "active": "in_progress",
    "wip": "in_progress",
    "done": "completed",
    "complete": "completed",
    "finished": "completed",
    "ok": "completed",
    "success": "completed",
    "succeeded": "completed",
    "fail": "failed",
    "error": "failed",
    "errored": "failed",
    "failure": "failed",
}


def parse_step_status(status: StepStatus | str) -> StepStatus:
    """``status`` as a :class:`StepStatus`, accepting :data:`STEP_STATUS_ALIASES`."""
    if isinstance(status, StepStatus):
        return status
    key = status.strip().lower() if isinstance(status, str) else status
    try:
        return StepStatus(STEP_STATUS_ALIASES.get(key, key))
    except (ValueError, TypeError):
        aliases = ", ".join(f"{a}={t}" for a, t in STEP_STATUS_ALIASES.items())
        raise ValidationError(
            f"step status {status!r} is not one of: "
            + ", ".join(s.value for s in StepStatus)
            + f" (aliases: {aliases})"
        ) from None


_MARK = {
    StepStatus.PENDING: "[ ]",
    StepStatus.IN_PROGRESS: "[~]",
    StepStatus.COMPLETED: "[x]",
    StepStatus.FAILED: "[!]",
}


@dataclass(frozen=True, slots=True)
class TaskCompletion:
    task: MemoryRecord  # the closed task record
    reflection: Reflection
    episode: MemoryRecord
    patterns: list[MemoryRecord]  # procedural patterns written or updated


def render(task: MemoryRecord | Mapping[str, Any]) -> str:
    """The "Current Task State" block (pure)."""
    data = task.content.structured if isinstance(task, MemoryRecord) else task
    lines = [
        "## Current Task State",
        f"Goal: {data.get('goal', '')}",
        f"Status: {data.get('status', 'active')} · iteration {data.get('iteration', 0)}",
    ]
    steps = data.get("steps", [])
    if steps:
        lines.append("Plan:")
        for i, step in enumerate(steps, 1):
            line = f"{i}. {_MARK[StepStatus(step['status'])]} {step['description']}"
            if step.get("result"):
                line += f" → {step['result']}"
            if step.get("error"):
                line += f" ✗ {step['error']}"
            lines.append(line)
    notes = data.get("notes", [])
    if notes:
        lines.append("Scratchpad:")
        lines.extend(f"- {note}" for note in notes)
    return "\n".join(lines)


def _step(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "status": StepStatus.PENDING.value,
        "result": None,
        "error": None,
    }


class TaskService:
    def __init__(
        self,
        ctx: LayerContext,
        episodes: EpisodeService | None = None,
        procedures: ProceduralService | None = None,
    ) -> None:
        self._ctx = ctx
        self._episodes = episodes or EpisodeService(ctx)
        self._procedures = procedures or ProceduralService(ctx)
        self._fallback = HeuristicLLM()

    def current(self, scope: Scope) -> MemoryRecord | None:
        """The session's active task, or ``None``."""
        found = list_records(self._ctx, scope, RecordType.TASK, limit=10, task_status="active")
        return found[0] if found else None

    def _require(self, scope: Scope) -> MemoryRecord:
        task = self.current(scope)
        if task is None:
            raise NotFoundError(f"no active task in {scope}; start one with tasks.start()")
        return task

    def _write(
        self,
        scope: Scope,
        task: MemoryRecord,
        data: Mapping[str, Any],
        *,
        status: str | None = None,
    ) -> MemoryRecord:
        data = dict(data)
        if status is not None:
            data["status"] = status
        updated = replace(
            task,
            version=task.version + 1,
            updated_at=self._ctx.clock.now(),
            content=replace(task.content, raw=render(data), structured=data),
            metadata={**task.metadata, "task_status": data.get("status", "active")},
        )
        return self._ctx.replace(scope, updated, expected_version=task.version, reindex=False)

    def start(self, scope: Scope, goal: str, steps: Sequence[str] = ()) -> MemoryRecord:
        """Start a task; a task still active in this session is closed as ``abandoned``."""
        if not isinstance(goal, str) or not goal.strip():
            raise ValidationError("a task needs a non-empty goal")
        if isinstance(steps, str):
            raise ValidationError("steps must be a list of step descriptions, not one string")
        previous = self.current(scope)
        if previous is not None:
            self._write(scope, previous, previous.content.structured, status="abandoned")
        data: dict[str, Any] = {
            "goal": goal.strip(),
            "steps": [_step(s) for s in steps],
            "notes": [],
            "iteration": 0,
            "status": "active",
            "tools": [],
            "started_at": self._ctx.clock.now().isoformat(),
        }
        record = build_record(
            self._ctx,
            scope,
            render(data),
            type=RecordType.TASK,
            importance=0.5,
            structured=data,
            metadata={"task_status": "active"},
        )
        self._ctx.insert([record])
        return record

    def update_step(
        self,
        scope: Scope,
        index: int,
        status: StepStatus | str,
        result: str | None = None,
        error: str | None = None,
    ) -> MemoryRecord:
        """Set step ``index`` (0-based) to ``status`` with its result or error."""
        task = self._require(scope)
        data = dict(task.content.structured)
        steps = [dict(s) for s in data["steps"]]
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(steps):
            valid = f"0..{len(steps) - 1}" if steps else "none (the plan has no steps)"
            raise ValidationError(f"task step index {index!r} is out of range; valid: {valid}")
        new_status = parse_step_status(status)
        steps[index].update(
            status=new_status.value,
            result=result if result is not None else steps[index]["result"],
            error=error if error is not None else steps[index]["error"],
        )
        data["steps"] = steps
        return self._write(scope, task, data)

    def add_step(self, scope: Scope, description: str) -> MemoryRecord:
        task = self._require(scope)
        data = dict(task.content.structured)
        data["steps"] = [*data["steps"], _step(description)]
        return self._write(scope, task, data)

    def note(self, scope: Scope, text: str, *, tool: str | None = None) -> MemoryRecord:
        """Add a scratchpad note (and remember the tool that produced it, if any)."""
        task = self._require(scope)
        data = dict(task.content.structured)
        data["notes"] = [*data["notes"], text][-_MAX_NOTES:]
        if tool and tool not in data.get("tools", []):
            data["tools"] = [*data.get("tools", []), tool]
        return self._write(scope, task, data)

    def next_iteration(self, scope: Scope) -> MemoryRecord:
        task = self._require(scope)
        data = dict(task.content.structured)
        data["iteration"] = int(data["iteration"]) + 1
        return self._write(scope, task, data)

    def complete(
        self,
        scope: Scope,
        success: bool,
        outcome: str,
        feedback: str = "",
        *,
        strategy: str = "sequential",
    ) -> TaskCompletion:
        """Close the active task: reflect, archive an episode, update procedural patterns."""
        task = self._require(scope)
        data = task.content.structured
        # The provider sees the outcome and feedback: redacted first, like everything stored.
        outcome, feedback = (
            self._ctx.redact_query(scope, v) if isinstance(v, str) else v
            for v in (outcome, feedback)
        )
        outcome_in = TaskOutcome(
            goal=str(data["goal"]),
            steps=[s["description"] for s in data["steps"]],
            step_statuses=[str(s["status"]) for s in data["steps"]],
            outcome=outcome,
            success=success,
            feedback=feedback,
            tools=list(data.get("tools", [])),
        )
        try:
            reflection = self._ctx.llm.reflect(outcome_in)
        except Exception as exc:  # a failing model degrades to the heuristic reflection
            log.warning("reflect failed (%s); using the heuristic reflection", exc)
            reflection = self._fallback.reflect(outcome_in)
        episode = self._episodes.record_task(scope, outcome_in, reflection, source_ids=(task.id,))
        patterns = self._procedures.learn(
            scope, outcome_in, reflection, strategy=strategy, source_ids=(task.id, episode.id)
        )
        closed = self._write(
            scope,
            task,
            {
                **data,
                "outcome": outcome,
                "feedback": feedback,
                "success": success,
                "episode_id": episode.id,
                "closed_at": self._ctx.clock.now().isoformat(),
            },
            status="completed" if success else "failed",
        )
        if feedback.strip():
            self._episodes.record_feedback(scope, feedback, source_ids=(task.id,))
        return TaskCompletion(closed, reflection, episode, patterns)
