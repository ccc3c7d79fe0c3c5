"""The update modes and newer-wins merging (pure); re-exported by
:mod:`memstrata.policies.update_modes`."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

__all__ = ["UpdateMode", "merge_newer_wins"]


class UpdateMode(StrEnum):
    OVERWRITE = "overwrite"
    APPEND = "append"
    MERGE = "merge"


def _blank(value: object) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def merge_newer_wins(
    current: Mapping[str, Any], incoming: Mapping[str, Any], *, incoming_is_newer: bool = True
) -> dict[str, Any]:
    """Field-wise merge: the newer side wins a field both sides fill; blanks erase nothing."""
    newer, older = (incoming, current) if incoming_is_newer else (current, incoming)
    merged = {k: v for k, v in older.items()}
    merged.update({k: v for k, v in newer.items() if not _blank(v)})
    for k, v in older.items():
        if _blank(merged.get(k)) and not _blank(v):
            merged[k] = v
    return merged


def _render(fields: Mapping[str, Any]) -> str:
    return "\n".join(f"{k}: {v}" for k, v in fields.items() if not _blank(v))
