"""``Rederived``: one definition for ``memstrata.rederive`` and ``memstrata._async.rederive``."""

from __future__ import annotations

from dataclasses import dataclass

from .records import RecordType

__all__ = ["Rederived"]


@dataclass(frozen=True, slots=True)
class Rederived:
    """What happened to one derived record."""

    record_id: str
    type: RecordType
    action: str  # refresh | forget | purge
    dropped: tuple[str, ...]
    left: int
