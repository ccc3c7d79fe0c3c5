"""``TaskStart``: one definition for ``memstrata.agent`` and ``memstrata._async.agent``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .layers.procedural import FailureWarning, Suggestion

__all__ = ["TaskStart"]


@dataclass(frozen=True, slots=True)
class TaskStart:
    task: Any  # the task record
    suggestion: Suggestion | None = None  # a proven decomposition, when one applies
    warnings: list[FailureWarning] = field(default_factory=list)
