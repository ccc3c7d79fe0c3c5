"""What a context holds whatever its query, read in one store call (``list_many``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..records import MemoryRecord

__all__ = ["Standing"]


@dataclass(frozen=True, slots=True)
class Standing:
    """Key memory (in its order), the session's active task with its rendered state, the
    history window (compressed, oldest first) and the newest summaries."""

    key: list[MemoryRecord] = field(default_factory=list)
    working: tuple[MemoryRecord, str] | None = None
    history: list[MemoryRecord] = field(default_factory=list)
    summaries: list[MemoryRecord] = field(default_factory=list)
