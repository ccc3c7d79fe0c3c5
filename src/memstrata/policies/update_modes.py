"""The three ways a stored memory is updated (seed 000 §4).

- **overwrite** (preferences): the incoming content replaces the current one;
- **append** (task history): the incoming text is added after the current one, list fields
  are concatenated;
- **merge** (profiles): field-wise, through ``llm.merge_profile`` when an LLM is given, else
  newer-wins: the fields of whichever side was observed later win, blank values never erase.

Each update is written as a new version (optimistic locking), so nothing is lost.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from ..errors import ValidationError
from ..layers.base import LayerContext
from ..llm.base import LLM
from ..records import Content, MemoryRecord
from ..scope import Scope
from ..text import content_hash

__all__ = ["UpdateMode", "apply_update", "merge_newer_wins", "update_content"]

log = logging.getLogger(__name__)


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


def update_content(
    mode: UpdateMode | str,
    current: Content,
    incoming: Content,
    *,
    llm: LLM | None = None,
    incoming_is_newer: bool = True,
) -> Content:
    """The content after an update in ``mode`` (pure apart from the optional LLM call)."""
    try:
        mode = UpdateMode(mode)
    except ValueError:
        raise ValidationError(
            f"update mode {mode!r} is unknown; use one of " + ", ".join(m.value for m in UpdateMode)
        ) from None
    if mode is UpdateMode.OVERWRITE:
        return incoming
    if mode is UpdateMode.APPEND:
        structured = dict(current.structured)
        for k, v in incoming.structured.items():
            old = structured.get(k)
            if isinstance(old, list) and isinstance(v, list):
                structured[k] = [*old, *v]
            elif isinstance(old, list):
                structured[k] = [*old, v]
            else:
                structured[k] = v
        return Content(
            raw=current.raw.rstrip() + "\n" + incoming.raw.lstrip(),
            summary=incoming.summary or current.summary,
            structured=structured,
        )
    fields = merge_newer_wins(
        current.structured, incoming.structured, incoming_is_newer=incoming_is_newer
    )
    strings_now = {k: str(v) for k, v in current.structured.items() if isinstance(v, str)}
    strings_in = {k: str(v) for k, v in incoming.structured.items() if isinstance(v, str)}
    if llm is not None and strings_now and strings_in and incoming_is_newer:
        try:
            fields.update(llm.merge_profile(strings_now, strings_in))
        except Exception as exc:  # a failing model degrades to newer-wins, never breaks
            log.warning("merge_profile failed (%s); merged field-wise, newer wins", exc)
    raw = _render(fields) or incoming.raw
    return Content(raw=raw, summary=incoming.summary or current.summary, structured=fields)


def apply_update(
    ctx: LayerContext,
    scope: Scope,
    record: MemoryRecord,
    incoming: Content,
    mode: UpdateMode | str,
    *,
    observed_at: datetime | None = None,
    use_llm: bool = True,
) -> MemoryRecord:
    """Write the next version of ``record`` (as read) updated in ``mode``.

    ``ConflictError`` if someone else wrote a version since ``record`` was read.
    """
    newer = observed_at is None or observed_at >= record.observed_at
    content = update_content(
        mode, record.content, incoming, llm=ctx.llm if use_llm else None, incoming_is_newer=newer
    )
    now = ctx.clock.now()
    updated = replace(
        record,
        content=content,
        version=record.version + 1,
        updated_at=now,
        content_hash=content_hash(content.raw),
        observed_at=max(record.observed_at, observed_at or record.observed_at),
    )
    ctx.replace(
        scope, updated, expected_version=record.version, reindex=content.raw != record.content.raw
    )
    return updated
