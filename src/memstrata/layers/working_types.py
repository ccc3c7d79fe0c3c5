"""Working memory's pure values and rendering (no store); re-exported by
:mod:`memstrata.layers.working`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from memstrata.errors import ValidationError
from memstrata.llm.base import Reflection
from memstrata.records import MemoryRecord

__all__ = ["STEP_STATUS_ALIASES", "StepStatus", "TaskCompletion", "parse_step_status", "render"]


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
