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
from dataclasses import replace
from datetime import datetime

from memstrata._async.layers.base import AsyncLayerContext
from memstrata._async.llm.base import AsyncLLM
from memstrata.errors import ValidationError
from memstrata.policies.update_modes_types import UpdateMode, _render, merge_newer_wins
from memstrata.records import Content, MemoryRecord
from memstrata.scope import Scope
from memstrata.text import content_hash

__all__ = ["UpdateMode", "apply_update", "merge_newer_wins", "update_content"]

log = logging.getLogger(__name__)


async def update_content(
    mode: UpdateMode | str,
    current: Content,
    incoming: Content,
    *,
    llm: AsyncLLM | None = None,
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
            fields.update(await llm.merge_profile(strings_now, strings_in))
        except Exception as exc:  # a failing model degrades to newer-wins, never breaks
            log.warning("merge_profile failed (%s); merged field-wise, newer wins", exc)
    raw = _render(fields) or incoming.raw
    return Content(raw=raw, summary=incoming.summary or current.summary, structured=fields)


async def apply_update(
    ctx: AsyncLayerContext,
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
    content = await update_content(
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
    await ctx.replace(
        scope, updated, expected_version=record.version, reindex=content.raw != record.content.raw
    )
    return updated
