"""Refreshing summaries whose turns are gone (issue 10 §2, "refresh stale summaries").

A summary says again what its turns said. When some of those turns are forgotten, deleted,
merged away or purged, the summary still says it: it is *stale*. Refreshing it writes a new
version summarised from the turns that are left (``ctx.llm``; the offline summariser when no
provider is set or it fails), with provenance: ``source_ids`` are the turns left,
``metadata["refreshed"]`` says when, why, by which summariser and which sources were dropped,
and the old text stays in the record's history (a purge removes that history instead, see
``Memory.purge``). A summary with no turn left is soft-deleted with the same log.

Which sources count as gone is the caller's decision: maintenance passes the user's
soft-deleted records (a turn that retention purged *after* it was summarised is not stale: the
summary is what was meant to remain); ``Memory.purge`` passes the ids it destroys.

A rolling summary (one per session) folds every turn that left the window, more than its
``source_ids`` list; it is refreshed from all the session's remaining turns up to its end.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from datetime import datetime

from memstrata._async.layers.base import AsyncLayerContext
from memstrata._async.layers.summaries import AsyncSummaryService
from memstrata._async.rederive import citing
from memstrata.audit_types import PURGED
from memstrata.errors import ConflictError, NotFoundError
from memstrata.filters import Filters
from memstrata.layers.summaries_types import Refresh, render_turns
from memstrata.records import Content, MemoryRecord, RecordStatus, RecordType
from memstrata.scope import Scope

__all__ = ["Refresh", "refresh_stale_summaries", "stale_summaries"]

_PAGE = 1000


async def stale_summaries(
    ctx: AsyncLayerContext, scope: Scope, gone: Collection[str]
) -> list[tuple[MemoryRecord, tuple[str, ...]]]:
    """The user's active summaries that cite any id in ``gone``, each with those ids."""
    if not gone:
        return []
    out = []
    flt = Filters(types=frozenset({RecordType.SUMMARY}))
    # by the store's index of citations (rederive.citing): what cites them, not every summary
    for s in await citing(ctx, scope.user_scope, gone, flt):
        dropped = tuple(i for i in s.source_ids if i in gone)
        if dropped:
            out.append((s, dropped))
    return out


async def _turns(
    ctx: AsyncLayerContext, scope: Scope, summary: MemoryRecord, gone: Collection[str]
) -> list[MemoryRecord]:
    """The turns the refreshed summary is written from (active, not ``gone``)."""
    uscope = scope.user_scope
    if summary.content.structured.get("kind") == "rolling" and summary.session:
        session = uscope.with_session(summary.session)
        flt = Filters(types=frozenset({RecordType.MESSAGE}))
        turns: list[MemoryRecord] = []
        async for batch in ctx.store.list_pages(session, flt, batch_size=_PAGE):
            turns.extend(batch)
        end = summary.observed_at
        return [t for t in turns if t.id not in gone and t.observed_at <= end]
    found = {r.id: r for r in await ctx.store.get_many(uscope, list(summary.source_ids))}
    return [found[i] for i in summary.source_ids if i in found and i not in gone]


async def refresh_stale_summaries(
    ctx: AsyncLayerContext,
    scope: Scope,
    gone: Collection[str],
    *,
    reason: str,
    dry_run: bool = False,
    now: datetime | None = None,
    rebuild: bool = False,
) -> list[Refresh]:
    """Rewrite every summary of the user that cites a record in ``gone`` (module docstring).

    ``rebuild`` (a purge) destroys the old summary, history included, and writes the new
    one under the same id as version 1, so no earlier text survives; a summary with no turn
    left is then purged as well. A summary changed by someone else meanwhile is skipped
    (the next run sees it again)."""
    when = now or ctx.clock.now()
    service = AsyncSummaryService(ctx)
    done: list[Refresh] = []
    for summary, dropped in await stale_summaries(ctx, scope, gone):
        turns = await _turns(ctx, scope, summary, gone)
        action = "refresh" if turns else ("purge" if rebuild else "forget")
        if not dry_run:
            try:
                await _apply(ctx, scope, service, summary, turns, dropped, reason, when, rebuild)
            except (ConflictError, NotFoundError):
                continue
        done.append(Refresh(summary.id, action, dropped, reason))
    return done


async def _apply(
    ctx: AsyncLayerContext,
    scope: Scope,
    service: AsyncSummaryService,
    summary: MemoryRecord,
    turns: Sequence[MemoryRecord],
    dropped: Sequence[str],
    reason: str,
    when: datetime,
    rebuild: bool,
) -> None:
    uscope = scope.user_scope
    # A purge (``rebuild``) says how many turns it dropped, not which: their ids leave the
    # store (store/purged_reader.py); a maintenance pass names the forgotten ones.
    named = [PURGED] * len(dropped) if rebuild else list(dropped)
    note = {"at": when.isoformat(), "reason": reason, "dropped_sources": named}
    if rebuild and not turns:
        await ctx.store.purge(uscope, [summary.id])
        return
    if not turns:
        gone = replace(
            summary,
            version=summary.version + 1,
            updated_at=when,
            metadata={
                **summary.metadata,
                "refreshed": {**note, "left": 0},
                "forgotten": {
                    "action": "forget",
                    "policy": "consolidation",
                    "reason": "every summarised turn is gone",
                    "score": 1.0,
                    "at": when.isoformat(),
                },
            },
        )
        await ctx.replace(uscope, gone, expected_version=summary.version, reindex=False)
        await ctx.store.set_status(uscope, [summary.id], RecordStatus.DELETED, when)
        return
    texts = render_turns(
        turns,
        tool_max_chars=ctx.config.tool_output_max_chars,
        ack_max_chars=ctx.config.ack_max_chars,
    )
    text, provider = await service.summarize(texts)
    structured = {
        **summary.content.structured,
        "time_start": turns[0].observed_at.isoformat(),
        "time_end": turns[-1].observed_at.isoformat(),
    }
    if structured.get("kind") == "rolling":
        structured["turns"] = len(turns)
    keep = set(summary.source_ids) - set(dropped)
    new = replace(
        summary,
        version=summary.version + 1,
        updated_at=when,
        content=Content(text, summary.content.summary, structured),
        source_ids=tuple(i for i in summary.source_ids if i in keep),
        metadata={
            **summary.metadata,
            "summarizer": provider,
            "refreshed": {**note, "left": len(turns), "summarizer": provider},
        },
    )
    if rebuild:
        await ctx.store.purge(uscope, [summary.id])
        await ctx.insert([replace(new, version=1, created_at=summary.created_at)])
        return
    await ctx.replace(uscope, new, expected_version=summary.version, reindex=True)
