"""Derived records whose sources are gone: re-derived, forgotten or purged (issue 10 §2, §6).

A cluster's digest, a conversation episode's summary, an automatic key-memory entry, a fact
or a procedure repeat the words of the records they cite (``source_ids``; a cluster's
``structured["members"]``). When some of those sources are forgotten, deleted or merged away
(maintenance) or purged (``Memory.purge``), the derived record must not keep saying them:

- a **cluster** gets a new digest and centroid from the members left (the digest is the
  offline extractive one the mid-term layer writes; the index vector is the centroid);
- a **conversation episode** is summarised again from the turns left (``ctx.llm``, the
  offline summariser when it fails), with its topics, actions and outcome;
- an **automatic key entry** (``origin == "auto"``) is extracted again from the turns left;
- any other derived record (a fact, a procedure, a task or feedback episode, a note) keeps
  its text, which a kept source also supports, and cites only the sources left;
- a derived record with **no source left** is forgotten (soft delete with a log entry,
  restorable) — or purged when its sources were.

Summaries are refreshed by :mod:`memstrata.consolidation`. Derived records of derived records
(a procedure citing an episode citing a task) are followed to the end. Maintenance writes
each change as a new version (the old text stays in the record's history, like a summary's);
a purge (``purge=True``) replaces the record by a first version under the same id, with no
history, so no earlier text survives, and its refreshed note lists one ``[purged]`` per
source dropped, not their ids (which the purge removes from the store). Which sources
count as gone is the caller's decision (retention purges turns on purpose after a summary
covered them: those are not "gone").
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Collection, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np

from memstrata._async.layers._build import list_records
from memstrata._async.layers.base import AsyncLayerContext
from memstrata._async.layers.episodic import _topics
from memstrata._async.layers.key import AsyncKeyMemoryService
from memstrata._async.layers.mid_term import AsyncMidTermService, _state, _structured
from memstrata.audit_types import PURGED
from memstrata.errors import ConflictError, NotFoundError
from memstrata.filters import Filters
from memstrata.layers.semantic_types import (
    EXTRACTED,
    current_rank,
    fact_sources,
    fact_without,
)
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.records import Content, MemoryRecord, RecordStatus, RecordType, Role, Source
from memstrata.rederive_types import Rederived
from memstrata.scope import Scope
from memstrata.store.types import PurgeReport
from memstrata.text import content_hash

__all__ = ["Rederived", "citing", "rederive", "stale_derived"]

log = logging.getLogger("memstrata.rederive")
_HEURISTIC = HeuristicLLM()
# Never "derived": messages cite themselves; summaries are consolidation.py's.
_NOT_DERIVED = frozenset({RecordType.MESSAGE, RecordType.SUMMARY})


def _sources(record: MemoryRecord) -> tuple[str, ...]:
    if record.type is RecordType.FACT:
        return fact_sources(record)
    if record.type is RecordType.CLUSTER:
        members = record.content.structured.get("members", [])
        return tuple(dict.fromkeys([*record.source_ids, *(str(m) for m in members)]))
    return record.source_ids


async def citing(
    ctx: AsyncLayerContext, scope: Scope, gone: Collection[str], flt: Filters
) -> list[MemoryRecord]:
    """The records of ``scope`` ``flt`` admits whose current version cites an id in
    ``gone``, in their listing's order: found by the store's index of citations
    (``citing``, store/citations.py), so a purge reads what cites what it purges, not the
    user's other records. What the index names is checked again by the callers (a record
    citing none of the ids is left out by them)."""
    ids = await ctx.store.citing(scope, sorted(gone))
    return [r for r in await ctx.store.get_many(scope, ids) if flt.matches(r)]


async def stale_derived(
    ctx: AsyncLayerContext, scope: Scope, gone: Collection[str], *, everything: bool = False
) -> list[tuple[MemoryRecord, tuple[str, ...]]]:
    """The user's derived records citing any id in ``gone``, each with those ids (current
    ones; ``everything`` adds deleted and superseded ones, as a purge must)."""
    if not gone:
        return []
    flt = Filters(include_deleted=everything, include_superseded=everything)
    out = []
    for r in await citing(ctx, scope.user_scope, gone, flt):
        if r.type in _NOT_DERIVED or r.id in gone:
            continue
        dropped = tuple(i for i in _sources(r) if i in gone)
        if dropped:
            out.append((r, dropped))
    return out


async def rederive(
    ctx: AsyncLayerContext,
    scope: Scope,
    gone: Collection[str],
    *,
    reason: str,
    purge: bool = False,
    dry_run: bool = False,
    now: datetime | None = None,
) -> tuple[list[Rederived], PurgeReport]:
    """Re-derive, forget or purge every derived record of the user citing ``gone`` (module
    docstring); returns what happened and what the purges removed. A record changed by
    someone else meanwhile is skipped (the next maintenance run sees it again)."""
    uscope = scope.user_scope
    when = now or ctx.clock.now()
    gone_all = set(gone)
    done: list[Rederived] = []
    seen: set[str] = set()
    purged = PurgeReport()
    while True:
        stale = [
            (r, d)
            for r, d in await stale_derived(ctx, uscope, gone_all, everything=purge)
            if r.id not in seen
        ]
        if not stale:
            if purge and not dry_run:
                await _orphans(
                    ctx,
                    uscope,
                    {*gone_all, PURGED},
                    when,
                    "the value that replaced it was purged",
                    relink=True,
                )
            return done, purged
        for record, dropped in stale:
            seen.add(record.id)
            left = [i for i in _sources(record) if i not in gone_all]
            current = record.is_active and record.superseded_by is None
            new, vector = (None, None)
            users = _user_set(record)
            if record.type is RecordType.FACT and (users or current or not purge):
                # the conflicts the gone turns said go; the value as fact_without decides
                note = _note(record, gone_all, when, reason)
                new = fact_without(record, gone_all, when, note, user_set=users)
            elif users:  # their own words: only the provenance changes
                new = _cited(record, record.source_ids, gone_all, when, reason)
            elif left and (current or not purge):
                if dry_run:  # decide only: no summariser or embedder call
                    new = (
                        record if await _rebuildable(ctx, uscope, record, left, gone_all) else None
                    )
                else:
                    new, vector = await _rebuilt(ctx, uscope, record, left, gone_all, when, reason)
            if new is None:
                gone_all.add(record.id)  # what cited it is stale too
            action = "refresh" if new is not None else ("purge" if purge else "forget")
            if not dry_run:
                try:
                    more = await _apply(ctx, uscope, record, new, vector, purge, when, reason)
                except (ConflictError, NotFoundError):
                    continue
                purged = _add(purged, more)
                if new is None and record.type is RecordType.FACT and current:
                    await _reinstate(ctx, uscope, record, when, reason, purged=purge)
            done.append(Rederived(record.id, record.type, action, dropped, len(left)))


async def _reinstate(
    ctx: AsyncLayerContext,
    scope: Scope,
    gone_fact: MemoryRecord,
    when: datetime,
    reason: str,
    *,
    purged: bool,
) -> None:
    """The facts ``gone_fact`` had ended are current again (a new version each): the value
    it replaced and the plan it carried out, or else the best of the others it ended
    (:func:`_orphans`). The update went with its turns; what the user said before it did
    not. One changed meanwhile stays superseded, in the history, not lost. ``purged``: it
    was purged, and the facts it ended say ``[purged]`` (store/purged_reader.py)."""
    links = {gone_fact.id, PURGED} if purged else {gone_fact.id}
    for link in ("replaces", "carries_out"):
        with contextlib.suppress(ConflictError, NotFoundError):
            await _reinstate_link(ctx, scope, gone_fact, link, links, when, reason)
    key = gone_fact.metadata.get("key")
    if isinstance(key, str):
        await _orphans(ctx, scope, links, when, reason, key=key, relink=False)


async def _reinstate_link(
    ctx: AsyncLayerContext,
    scope: Scope,
    gone_fact: MemoryRecord,
    link: str,
    links: Collection[str | None],
    when: datetime,
    reason: str,
) -> None:
    target = gone_fact.content.structured.get(link)
    if not target or target == PURGED:  # a value (a plan) already purged: nothing to end
        return
    old = await ctx.store.get(scope, str(target), include_deleted=True)
    if old.superseded_by not in links or not old.is_active:
        return
    await _back(ctx, scope, old, when, reason)


async def _back(
    ctx: AsyncLayerContext, scope: Scope, old: MemoryRecord, when: datetime, reason: str
) -> None:
    """``old``, an ended fact, current again (a new version, marked reinstated)."""
    back = replace(
        old,
        version=old.version + 1,
        updated_at=when,
        valid_to=None,
        superseded_by=None,
        metadata={**old.metadata, "reinstated": {"at": when.isoformat(), "reason": reason}},
    )
    await ctx.replace(scope, back, expected_version=old.version, reindex=False)


async def _orphans(
    ctx: AsyncLayerContext,
    scope: Scope,
    links: Collection[str | None],
    when: datetime,
    reason: str,
    *,
    key: str | None = None,
    relink: bool,
) -> None:
    """Facts left superseded by a record that is gone (``superseded_by`` in ``links``: its
    id, or ``[purged]`` once it is purged). When their key is left with no live fact, the
    best active one (``current_rank``) is the current value again, as the value the gone
    one replaced would be: a fact that goes with its turns (``key``: that fact's key, with
    the facts it ended without naming them: a restore or an import made it current over
    them, an upsert ended an extra one), or a purged value (the user asked to forget that
    value, not the ones before it). With ``relink`` (a purge: a link to a purged record
    points nowhere) the others, and all of them when the key has a live fact, are
    superseded by the key's current value instead (a new version each, their ``valid_to``
    kept). Without ``key``, the facts ended by one of ``links`` are found by the store's
    index of citations (a fact's ``superseded_by`` is in it), not by reading every fact of
    the user. One changed meanwhile is left for the next purge or restore."""
    if key is None:  # the facts ended by them: by the store's index (citations.py)
        flt = Filters(
            types=frozenset({RecordType.FACT}), include_deleted=True, include_superseded=True
        )
        facts = await citing(ctx, scope, {i for i in links if i is not None}, flt)
    else:
        facts = await list_records(ctx, scope, RecordType.FACT, include_superseded=True, key=key)
    orphans: dict[str, list[MemoryRecord]] = {}
    for r in facts:
        name = r.metadata.get("key")
        if r.superseded_by in links and isinstance(name, str) and key in (None, name):
            orphans.setdefault(name, []).append(r)
    for name, ended in orphans.items():
        live = await list_records(ctx, scope, RecordType.FACT, key=name)
        if live:
            by = max(live, key=current_rank).id
        else:
            active = [r for r in ended if r.is_active]
            if not active:
                by = None
            else:
                best = max(active, key=current_rank)
                with contextlib.suppress(ConflictError, NotFoundError):
                    await _back(ctx, scope, best, when, reason)
                by = best.id
                ended = [r for r in ended if r.id != best.id]
        for r in ended if relink else ():
            moved = replace(r, version=r.version + 1, updated_at=when, superseded_by=by)
            with contextlib.suppress(ConflictError, NotFoundError):
                await ctx.replace(scope, moved, expected_version=r.version, reindex=False)


def _add(a: PurgeReport, b: PurgeReport | None) -> PurgeReport:
    if b is None:
        return a
    return replace(
        a,
        records=a.records + b.records,
        versions=a.versions + b.versions,
        vectors=a.vectors + b.vectors,
        cache_entries=a.cache_entries + b.cache_entries,
        remaining=a.remaining + b.remaining,
    )


def _user_set(record: MemoryRecord) -> bool:
    """Written by the user, not derived: never forgotten or purged for its sources."""
    if record.type is RecordType.KEY:
        return record.metadata.get("origin") != "auto"
    if record.type is RecordType.FACT and record.metadata.get("origin") == EXTRACTED:
        return record.metadata.get("pinned") is True
    return (
        record.source in (Source.EXPLICIT_USER_INPUT, Source.CORRECTED_MEMORY)
        or record.metadata.get("pinned") is True
    )


def _note(
    record: MemoryRecord, gone: Collection[str], when: datetime, reason: str
) -> dict[str, Any]:
    return {
        "at": when.isoformat(),
        "reason": reason,
        "dropped_sources": [i for i in _sources(record) if i in gone],
    }


def _unnamed(new: MemoryRecord) -> MemoryRecord:
    """``new``'s refreshed note as a purge writes it: how many sources it dropped, each
    :data:`PURGED`, not which (their ids must leave the store; a maintenance pass names
    the forgotten ones, which are still there to restore)."""
    note = new.metadata.get("refreshed")
    if not isinstance(note, dict):
        return new
    dropped = [PURGED for _ in note.get("dropped_sources", ())]
    return replace(
        new, metadata={**new.metadata, "refreshed": {**note, "dropped_sources": dropped}}
    )


def _cited(
    record: MemoryRecord, ids: Sequence[str], gone: Collection[str], when: datetime, reason: str
) -> MemoryRecord:
    """The same text citing only the sources left."""
    kept = tuple(i for i in ids if i not in gone)
    note = _note(record, gone, when, reason)
    return replace(
        record,
        version=record.version + 1,
        updated_at=when,
        source_ids=kept,
        metadata={**record.metadata, "refreshed": {**note, "left": len(kept)}},
    )


async def _alive(
    ctx: AsyncLayerContext, scope: Scope, ids: Sequence[str], gone: Collection[str]
) -> list[MemoryRecord]:
    found = {r.id: r for r in await ctx.store.get_many(scope, [i for i in ids if i not in gone])}
    return [found[i] for i in ids if i in found and found[i].is_active]


async def _rebuildable(
    ctx: AsyncLayerContext,
    scope: Scope,
    record: MemoryRecord,
    left: list[str],
    gone: Collection[str],
) -> bool:
    """Whether :func:`_rebuilt` would find something to say (for a dry run)."""
    if record.type is RecordType.CLUSTER or _from_turns(record):
        return bool(await _alive(ctx, scope, left, gone))
    if record.type is RecordType.FACT:
        return (
            fact_without(record, gone, record.updated_at, {}, user_set=_user_set(record))
            is not None
        )
    return any(i not in gone for i in record.source_ids)


def _from_turns(record: MemoryRecord) -> bool:
    """Written from its turns' words: a conversation episode, an automatic key entry."""
    if record.type is RecordType.EPISODE:
        return record.content.structured.get("kind") == "conversation"
    return record.type is RecordType.KEY and record.metadata.get("origin") == "auto"


async def _rebuilt(
    ctx: AsyncLayerContext,
    scope: Scope,
    record: MemoryRecord,
    left: list[str],
    gone: Collection[str],
    when: datetime,
    reason: str,
) -> tuple[MemoryRecord | None, Any]:
    """The record re-derived from the sources left (``None``: nothing left to say it)."""
    note = _note(record, gone, when, reason)
    base = replace(record, version=record.version + 1, updated_at=when)
    if record.type is RecordType.CLUSTER:
        return await _cluster(ctx, scope, base, left, gone, note)
    if (
        record.type is RecordType.EPISODE
        and record.content.structured.get("kind") == "conversation"
    ):
        turns = await _alive(ctx, scope, left, gone)
        if not turns:
            return None, None
        return await _episode(ctx, base, turns, note), None
    if record.type is RecordType.KEY and record.metadata.get("origin") == "auto":
        turns = await _alive(ctx, scope, left, gone)
        if not turns:
            return None, None
        text = await AsyncKeyMemoryService(ctx)._key_text(replace(record, source_ids=tuple(left)))
        return replace(
            base,
            content=Content(text),
            content_hash=content_hash(text),
            source_ids=tuple(left),
            metadata={**record.metadata, "refreshed": {**note, "left": len(turns)}},
        ), None
    if not any(i not in gone for i in record.source_ids):
        return None, None
    return _cited(record, record.source_ids, gone, when, reason), None


async def _cluster(
    ctx: AsyncLayerContext,
    scope: Scope,
    base: MemoryRecord,
    left: list[str],
    gone: Collection[str],
    note: dict[str, Any],
) -> tuple[MemoryRecord | None, Any]:
    members = await _alive(ctx, scope, left, gone)
    if not members:
        return None, None
    state = _state(base)
    was = state.count
    state.members = [m.id for m in members]
    state.total = max(len(members), was - len(note["dropped_sources"]))
    vectors = await ctx.embedder_for(scope).embed_batch([m.text for m in members])
    state.centroid = np.asarray(vectors, dtype=np.float64).mean(axis=0)
    state.time_start = min(m.observed_at for m in members)
    state.time_end = max(m.observed_at for m in members)
    text = await AsyncMidTermService(ctx)._digest(scope, state)
    structured = {**base.content.structured, **_structured(state, ctx.embedder.model_id)}
    norm = float(np.linalg.norm(state.centroid))
    vector = (state.centroid / norm if norm else state.centroid).astype(np.float32)
    new = replace(
        base,
        content=Content(text, structured=structured),
        content_hash=content_hash(text),
        source_ids=tuple(state.members),
        observed_at=state.time_end,
        metadata={**base.metadata, "refreshed": {**note, "left": len(members)}},
    )
    return new, vector


async def _episode(
    ctx: AsyncLayerContext, base: MemoryRecord, turns: list[MemoryRecord], note: dict[str, Any]
) -> MemoryRecord:
    max_words = ctx.config.summary_max_words
    lines = [f"{m.role.value if m.role else 'note'}: {m.text}" for m in turns]
    try:
        summary = await ctx.llm.summarize(lines, max_words=max_words)
        writer = ctx.llm.name
    except Exception as exc:  # the offline summary, never a stale episode
        log.warning("summarize failed (%s); using the extractive summary", exc)
        summary, writer = _HEURISTIC.summarize(lines, max_words=max_words), _HEURISTIC.name
    texts = [m.text for m in turns if m.text.strip()]
    summary = summary.strip() or (texts[-1][:500] if texts else "(empty)")
    actions = [m.text.split("\n")[0][:200] for m in turns if m.role in (Role.ASSISTANT, Role.TOOL)]
    user_last = [m.text[:200] for m in turns if m.role is Role.USER][-1:]
    structured = {
        **base.content.structured,
        "summary": summary,
        "topics": _topics(texts),
        "actions": actions[:5],
        "outcomes": actions[:5][-1:] or user_last,
        "message_count": len(turns),
        "started_at": min(m.observed_at for m in turns).isoformat(),
        "ended_at": max(m.observed_at for m in turns).isoformat(),
    }
    return replace(
        base,
        content=Content(summary, summary, structured),
        content_hash=content_hash(summary),
        source_ids=tuple(m.id for m in turns),
        metadata={**base.metadata, "refreshed": {**note, "left": len(turns), "summarizer": writer}},
    )


async def _apply(
    ctx: AsyncLayerContext,
    scope: Scope,
    old: MemoryRecord,
    new: MemoryRecord | None,
    vector: Any,
    purge: bool,
    when: datetime,
    reason: str,
) -> PurgeReport | None:
    if purge:
        report = await ctx.store.purge(scope, [old.id])
        if new is None:
            return report
        first = replace(_unnamed(new), version=1, created_at=old.created_at)
        write = (
            await ctx.write_with(first, vector)
            if vector is not None
            else (await ctx.writes([first]))[0]
        )
        await ctx.store.insert([write])
        return replace(report, records=0, versions=0, vectors=0, cache_entries=0)
    if new is None:
        forgotten = replace(
            old,
            version=old.version + 1,
            updated_at=when,
            metadata={
                **old.metadata,
                "forgotten": {
                    "action": "forget",
                    "policy": "consolidation",
                    "reason": f"every source is gone ({reason})",
                    "score": 1.0,
                    "at": when.isoformat(),
                },
            },
        )
        await ctx.replace(scope, forgotten, expected_version=old.version, reindex=False)
        await ctx.store.set_status(scope, [old.id], RecordStatus.DELETED, when)
        return None
    if vector is not None:
        await ctx.store.replace(
            scope, await ctx.write_with(new, vector), expected_version=old.version
        )
    else:
        await ctx.replace(scope, new, expected_version=old.version, reindex=new.text != old.text)
    return None
