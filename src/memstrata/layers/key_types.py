"""Key memory's pure ordering rule (no store); re-exported by :mod:`memstrata.layers.key`."""

from __future__ import annotations

from collections.abc import Sequence

from memstrata.records import MemoryRecord

__all__ = ["ORIGIN_AUTO", "ORIGIN_USER", "key_order", "key_sort_key"]

ORIGIN_USER = "user"
ORIGIN_AUTO = "auto"


def key_sort_key(record: MemoryRecord) -> tuple[int, int, float]:
    """User-set before auto, then higher priority, then newest."""
    origin = 0 if record.metadata.get("origin") == ORIGIN_USER else 1
    priority = int(record.metadata.get("priority", 0))
    return (origin, -priority, -record.created_at.timestamp())


def key_order(records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    return sorted(records, key=key_sort_key)
