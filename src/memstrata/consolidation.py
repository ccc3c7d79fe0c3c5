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
from dataclasses import dataclass, replace
from datetime import datetime

from .errors import ConflictError, NotFoundError
from .filters import Filters
from .layers.base import LayerContext
from .layers.summaries import SummaryService, render_turns
from .records import Content, MemoryRecord, RecordStatus, RecordType
from .scope import Scope

__all__ = ["Refresh", "refresh_stale_summaries", "stale_summaries"]

_PAGE = 1000


@dataclass(frozen=True, slots=True)
class Refresh:
    """What happened to one stale summary."""

    summary_id: str
    action: str  # refresh | forget (no source left)
    dropped: tuple[str, ...]
    reason: str


def _summaries(ctx: LayerContext, scope: Scope) -> list[MemoryRecord]:
    out: list[MemoryRecord] = []
    flt = Filters(types=frozenset({RecordType.SUMMARY}))
    while batch := ctx.store.list(scope, flt, limit=_PAGE, offset=len(out), newest_first=False):
        out.extend(batch)
    return out


def stale_summaries(
    ctx: LayerContext, scope: Scope, gone: Collection[str]
) -> list[tuple[MemoryRecord, tuple[str, ...]]]:
    """The user's active summaries that cite any id in ``gone``, each with those ids."""
    if not gone:
        return []
    out = []
    for s in _summaries(ctx, scope.user_scope):
        dropped = tuple(i for i in s.source_ids if i in gone)
        if dropped:
            out.append((s, dropped))
    return out


def _turns(
    ctx: LayerContext, scope: Scope, summary: MemoryRecord, gone: Collection[str]
) -> list[MemoryRecord]:
    """The turns the refreshed summary is written from (active, not ``gone``)."""
    uscope = scope.user_scope
    if summary.content.structured.get("kind") == "rolling" and summary.session:
        session = uscope.with_session(summary.session)
        flt = Filters(types=frozenset({RecordType.MESSAGE}))
        turns: list[MemoryRecord] = []
        while batch := ctx.store.list(
            session, flt, limit=_PAGE, offset=len(turns), newest_first=False
        ):
            turns.extend(batch)
        end = summary.observed_at
        return [t for t in turns if t.id not in gone and t.observed_at <= end]
    found = {r.id: r for r in ctx.store.get_many(uscope, list(summary.source_ids))}
    return [found[i] for i in summary.source_ids if i in found and i not in gone]


def refresh_stale_summaries(
    ctx: LayerContext,
    scope: Scope,
    gone: Collection[str],
    *,
    reason: str,
    dry_run: bool = False,
    now: datetime | None = None,
) -> list[Refresh]:
    """Rewrite every summary of the user that cites a record in ``gone`` (module docstring).

    A summary changed by someone else meanwhile is skipped (the next run sees it again)."""
    when = now or ctx.clock.now()
    service = SummaryService(ctx)
    done: list[Refresh] = []
    for summary, dropped in stale_summaries(ctx, scope, gone):
        turns = _turns(ctx, scope, summary, gone)
        action = "refresh" if turns else "forget"
        if not dry_run:
            try:
                _apply(ctx, scope, service, summary, turns, dropped, reason, when)
            except (ConflictError, NotFoundError):
                continue
        done.append(Refresh(summary.id, action, dropped, reason))
    return done


def _apply(
    ctx: LayerContext,
    scope: Scope,
    service: SummaryService,
    summary: MemoryRecord,
    turns: Sequence[MemoryRecord],
    dropped: Sequence[str],
    reason: str,
    when: datetime,
) -> None:
    uscope = scope.user_scope
    note = {"at": when.isoformat(), "reason": reason, "dropped_sources": list(dropped)}
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
        ctx.replace(uscope, gone, expected_version=summary.version, reindex=False)
        ctx.store.set_status(uscope, [summary.id], RecordStatus.DELETED, when)
        return
    texts = render_turns(
        turns,
        tool_max_chars=ctx.config.tool_output_max_chars,
        ack_max_chars=ctx.config.ack_max_chars,
    )
    text, provider = service.summarize(texts)
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
    ctx.replace(uscope, new, expected_version=summary.version, reindex=True)
