"""Maintenance runs: forgetting, decay scores, retention and consolidation for one user.

``maintain(ctx, scope, policy=..., dry_run=False)`` works over the store protocol only:

1. **scan** the user's current records;
2. **decide** with a forgetting policy (policies/forgetting.py; pure) and apply: a forget is a
   soft delete whose log entry (id, action, policy, reason, score, time) is written on the
   record itself (``metadata["forgotten"]``, kept in its history) and returned in the report,
   so ``Memory.restore`` brings it back until retention purges it; a downgrade halves the
   importance once (``metadata["downgraded_at"]``);
3. keep **decay_score** current on every non-message record (a new version only when the
   score moved by at least 0.05, so history does not grow on every run);
4. **retention** purges for real: conversation messages 30 days after a summary covered
   them, procedural patterns 90 days after their last use (seed 002); the audit log is
   never purged;
5. **consolidation when idle** (no queued jobs for the user): near-duplicate notes and
   episodes (cosine ≥ the dedup threshold) are merged into the older one with provenance
   (mentions, source ids, tags) and the newer one is forgotten with reason ``merged``;
   then every summary citing a turn that is now soft-deleted (forgotten, deleted, merged) is
   **refreshed** from the turns left, with provenance (:mod:`memstrata.consolidation`), and
   so is every other derived record citing one — clusters, conversation episodes, automatic
   key entries, facts, procedures — or forgotten when no source is left
   (:mod:`memstrata.rederive`);
6. **counters of past periods**, store-wide (session 30): the quota counters of past days
   and the rate-limit windows' counters that no take will sweep again (a user or an API
   key that never came back), a bounded batch of ``meta`` rows looked at per pass, never
   one still counting now or the period before (:func:`memstrata.store.counter_types.
   stale_at_us`); not in a dry run;
7. **finished jobs**, store-wide (jobs32): ``done`` jobs due more than
   ``Retention.done_jobs_days`` ago (7 by default) are deleted, in batches of
   :data:`~memstrata.jobs.DONE_SWEEP_BATCH` (one store transaction each), at most
   :data:`_DONE_SWEEP_BATCHES` batches per pass; failed, pending and running jobs never;
   not in a dry run.

Key memory and whatever the user set explicitly are never forgotten, downgraded or merged
automatically (:func:`~memstrata.policies.forgetting.is_protected`). ``dry_run`` decides and
reports everything and writes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from memstrata._async.audit import AsyncAuditLog
from memstrata._async.consolidation import refresh_stale_summaries
from memstrata._async.layers.base import AsyncLayerContext
from memstrata._async.rederive import rederive
from memstrata._async.search.reply_terms import terms_after_change
from memstrata._async.store.base import AsyncStore
from memstrata.audit_types import AuditEvent
from memstrata.clock import FixedClock, later
from memstrata.errors import ConflictError, NotFoundError, ValidationError
from memstrata.filters import Filters
from memstrata.jobs import DONE_SWEEP_BATCH
from memstrata.maintenance_types import (
    MAINTAIN,
    LogEntry,
    MaintenanceReport,
    Retention,
    check_interval,
    make_maintain_job,
)
from memstrata.policies.dedup import merge_provenance
from memstrata.policies.forgetting import (
    DEFAULT_POLICY,
    Action,
    ForgettingPolicy,
    age_days,
    decay_score,
    explicit_forget,
    importance_by_tag_args,
    is_protected,
    make_policy,
    with_importance_by_tag,
)
from memstrata.records import MemoryRecord, RecordStatus, RecordType
from memstrata.scope import Scope
from memstrata.store.counter_types import epoch_us

__all__ = [
    "MAINTAIN",
    "LogEntry",
    "MaintenanceReport",
    "Retention",
    "forget",
    "maintain",
    "check_interval",
    "make_maintain_job",
    "schedule",
    "set_importance_by_tag",
]

log = logging.getLogger("memstrata.maintenance")

_DECAY_STEP = 0.05
_DOWNGRADE_FACTOR = 0.5
_MERGE_TYPES = frozenset({RecordType.NOTE, RecordType.EPISODE})
_PAGE = 1000
_DONE_SWEEP_BATCHES = 5  # a pass deletes 5,000 done jobs at most (jobs.DONE_SWEEP_BATCH)


async def _all(ctx: AsyncLayerContext, scope: Scope, flt: Filters) -> list[MemoryRecord]:
    out: list[MemoryRecord] = []
    async for batch in ctx.store.list_pages(scope, flt, batch_size=_PAGE):  # keyset pages
        out.extend(batch)
    return out


async def _soft_delete(
    ctx: AsyncLayerContext,
    scope: Scope,
    record: MemoryRecord,
    entry: LogEntry,
    *,
    audit: AsyncAuditLog | None = None,
    event: AuditEvent | None = None,
) -> None:
    """Write the log entry on the record (a new version) and soft-delete it, in one
    transaction; with ``event``, its audit event too — in that transaction when the log is
    a table of the store (SQLite, PostgreSQL), else just before it (``memory://``, whose
    log goes with the process anyway): killed anywhere, a forgotten record has its event."""
    now = ctx.clock.now()
    note = {
        "action": entry.action,
        "policy": entry.policy,
        "reason": entry.reason,
        "score": round(entry.score, 6),
        "at": now.isoformat(),
    }
    tagged = replace(
        record,
        version=record.version + 1,
        updated_at=now,
        metadata={**record.metadata, "forgotten": note},
    )
    write = await ctx.version_write(tagged, reindex=False)
    # the reply indexed under a forgotten turn's questions loses them (search/reply_terms)
    gone = replace(record, status=RecordStatus.DELETED)
    again = await terms_after_change(ctx.store, record, gone)
    events = [] if event is None else [event]
    joined = audit if audit is not None and events and audit.in_transactions else None
    if audit is not None and joined is None:
        await audit.append(events)
    async with ctx.store.transaction() as tx:
        await tx.replace(scope, write, expected_version=record.version)
        await tx.set_status(scope, [record.id], RecordStatus.DELETED, now)
        if again:
            await tx.reterm(scope, again)
        if joined is not None:
            await joined.append_in(tx, events)


def _user(scope: Scope) -> Scope:
    return scope.user_scope


async def maintain(
    ctx: AsyncLayerContext,
    scope: Scope,
    *,
    policy: str | ForgettingPolicy = DEFAULT_POLICY,
    retention: Retention | None = None,
    dry_run: bool = False,
    consolidate: bool = True,
    audit: AsyncAuditLog | None = None,
    actor: str = "system:maintenance",
    now: datetime | None = None,
) -> MaintenanceReport:
    """One maintenance pass over the user of ``scope`` (module docstring). ``now`` runs it
    as of another time (a replay, or the bench asking what a pass 180 days on would do):
    every decision and stamp uses it instead of the context's clock."""
    if now is not None:
        ctx = replace(ctx, clock=FixedClock(now))
    pol = make_policy(policy)
    ret = retention if retention is not None else Retention()
    if not isinstance(ret, Retention):
        raise ValidationError("retention must be a memstrata.maintenance.Retention")
    uscope = _user(scope)
    now = ctx.clock.now()
    report = MaintenanceReport(str(uscope), pol.name, dry_run)
    records = await _all(ctx, uscope, Filters())
    report.scanned = len(records)
    by_id = {r.id: r for r in records}

    # 1-2. forgetting policy
    candidates = [r for r in records if r.type is not RecordType.MESSAGE]
    decisions = pol.decide_all(candidates, now)
    gone: set[str] = set()
    for d in decisions:
        rec = by_id[d.record_id]
        if d.action is Action.FORGET and not is_protected(rec):
            entry = LogEntry(rec.id, "forget", d.policy, d.reason, d.score, now)
            if await _apply(
                report, entry, dry_run, lambda r=rec, e=entry: _soft_delete(ctx, uscope, r, e)
            ):
                report.forgotten += 1
                gone.add(rec.id)
        elif (
            d.action is Action.DOWNGRADE
            and not is_protected(rec)
            and "downgraded_at" not in rec.metadata
        ):
            entry = LogEntry(rec.id, "downgrade", d.policy, d.reason, d.score, now)
            new = replace(
                rec,
                importance=rec.importance * _DOWNGRADE_FACTOR,
                metadata={**rec.metadata, "downgraded_at": now.isoformat()},
            )
            if await _apply(report, entry, dry_run, lambda r=rec, n=new: _write(ctx, uscope, r, n)):
                report.downgraded += 1
                gone.add(rec.id)  # its decay score was written with it
        else:
            report.preserved += 1

    # 3. decay scores
    for rec in candidates:
        if rec.id in gone:
            continue
        score = round(decay_score(rec, now), 4)
        if abs(score - rec.decay_score) < _DECAY_STEP:
            continue
        new = replace(rec, decay_score=score)
        if dry_run or await _try(report, lambda r=rec, n=new: _write(ctx, uscope, r, n)):
            report.decay_updated += 1

    # 4. retention
    purge_ids = await _retention_victims(ctx, uscope, records, ret, now)
    purges = [LogEntry(rid, "purge", "retention", reason, 0.0, now) for rid, reason in purge_ids]
    report.log.extend(purges)
    if purge_ids and not dry_run:
        from memstrata._async.search.reply_terms import purge_records

        if audit is not None:
            # Recorded before the purge, not with the pass's report at its end: a purge
            # cannot be undone, and a process killed after it left no event naming what
            # it destroyed. Killed between the two, the event precedes a purge that the
            # next pass makes (and records again); a purge that fails says so too.
            await audit.append([_event(audit, uscope, e, actor) for e in purges])
        try:
            await purge_records(ctx.store, uscope, [rid for rid, _ in purge_ids])
        except Exception as exc:
            if audit is not None:
                await audit.record(
                    uscope.tenant,
                    actor,
                    "purge_failed",
                    user=uscope.user,
                    record_ids=[rid for rid, _ in purge_ids],
                    reason=f"the retention purge recorded before it failed: {exc}",
                    policy="retention",
                )
            raise
    report.purged = len(purge_ids)

    # 5. consolidation when idle
    if consolidate and not await _busy(ctx, uscope):
        await _merge_duplicates(
            ctx, uscope, [r for r in records if r.id not in gone], report, dry_run, now
        )
        gone = await _gone(ctx, uscope, report)
        await _refresh_derived(ctx, uscope, gone, report, dry_run, now)
        await _refresh_summaries(ctx, uscope, gone, report, dry_run, now)

    # 6. counters of past days and windows no take will sweep again (a user or a key who
    # never came back), store-wide, a bounded batch per pass (shared_sql.sweep_sql)
    if not dry_run:
        report.counters_swept = await _sweep_counters(ctx.store, now)
        # 7. done jobs past their retention, every user's (a row per job otherwise forever)
        if ret.done_jobs_days is not None:
            report.jobs_swept = await _sweep_done_jobs(ctx.store, now, ret.done_jobs_days)

    log.info("maintenance %s: %s", "dry run" if dry_run else "run", report.as_dict())
    if audit is not None and not dry_run:
        await _audit_report(audit, uscope, report, actor)
    for entry in report.log:
        log.debug(
            "maintenance %s %s (%s: %s, score %.3f)",
            entry.action,
            entry.record_id,
            entry.policy,
            entry.reason,
            entry.score,
        )
    return report


async def _sweep_counters(store: AsyncStore, now: datetime) -> int:
    """The store-wide sweep of counter rows (a store without counters has none)."""
    sweep = getattr(store, "sweep_counters", None)
    if sweep is None:
        return 0
    return int(await sweep(epoch_us(now)))


async def _sweep_done_jobs(store: AsyncStore, now: datetime, days: float) -> int:
    """Done jobs due more than ``days`` before ``now`` deleted, batch by batch (each its
    own transaction, so claims and finishes interleave), until a batch is short or the
    pass's cap."""
    try:
        before = now - timedelta(days=days)
    except OverflowError:  # a retention longer than the calendar: no job is that old
        return 0
    swept = 0
    for _ in range(_DONE_SWEEP_BATCHES):
        n = await store.sweep_done_jobs(before, DONE_SWEEP_BATCH)
        swept += n
        if n < DONE_SWEEP_BATCH:
            break
    return swept


async def _audit_report(
    audit: AsyncAuditLog, scope: Scope, report: MaintenanceReport, actor: str
) -> None:
    # the retention purges were recorded before they were made (maintain)
    events = [_event(audit, scope, e, actor) for e in report.log if e.action != "purge"]
    events.append(
        audit.event(
            scope.tenant,
            actor,
            "maintain",
            user=scope.user,
            policy=report.policy,
            details=report.as_dict(),
        )
    )
    await audit.append(events)


def _event(audit: AsyncAuditLog, scope: Scope, e: LogEntry, actor: str) -> AuditEvent:
    return audit.event(
        scope.tenant,
        actor,
        e.action,
        user=scope.user,
        record_ids=[e.record_id],
        reason=e.reason,
        policy=e.policy,
        score=e.score,
        at=e.at,
    )


async def _write(
    ctx: AsyncLayerContext, scope: Scope, old: MemoryRecord, new: MemoryRecord
) -> None:
    now = ctx.clock.now()
    new = replace(
        new, version=old.version + 1, updated_at=now, decay_score=round(decay_score(old, now), 4)
    )
    await ctx.replace(scope, new, expected_version=old.version, reindex=False)


async def _try(report: MaintenanceReport, action: object) -> bool:
    try:
        await action()  # type: ignore[operator]
    except (ConflictError, NotFoundError):
        report.skipped += 1  # changed or removed meanwhile: the next run looks again
        return False
    return True


async def _apply(report: MaintenanceReport, entry: LogEntry, dry_run: bool, action: object) -> bool:
    if dry_run or await _try(report, action):
        report.log.append(entry)
        return True
    return False


async def _retention_victims(
    ctx: AsyncLayerContext,
    scope: Scope,
    records: Sequence[MemoryRecord],
    ret: Retention,
    now: datetime,
) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if ret.messages_after_summary_days is not None:
        summarised: dict[str, datetime] = {}
        summaries = await _all(
            ctx, scope, Filters(types=frozenset({RecordType.SUMMARY}), include_deleted=True)
        )
        for s in summaries:
            for sid in s.source_ids:
                if sid not in summarised or s.created_at < summarised[sid]:
                    summarised[sid] = s.created_at
        limit = ret.messages_after_summary_days
        messages = await _all(
            ctx, scope, Filters(types=frozenset({RecordType.MESSAGE}), include_deleted=True)
        )
        for m in messages:
            at = summarised.get(m.id)
            if at is not None and age_days(at, now) > limit:
                out.append(
                    (
                        m.id,
                        f"message summarised {age_days(at, now):.0f} days ago "
                        f"(retention {limit:g} days)",
                    )
                )
    if ret.procedures_days is not None:
        limit = ret.procedures_days
        procedures = await _all(
            ctx, scope, Filters(types=frozenset({RecordType.PROCEDURE}), include_deleted=True)
        )
        for p in procedures:
            last = max(p.updated_at, p.last_accessed_at or p.updated_at)
            if age_days(last, now) > limit:
                out.append(
                    (
                        p.id,
                        f"procedure unused for {age_days(last, now):.0f} days "
                        f"(retention {limit:g} days)",
                    )
                )
    return out


async def _busy(ctx: AsyncLayerContext, scope: Scope) -> bool:
    return any(
        j.kind != MAINTAIN
        for j in await ctx.store.list_jobs(scope.tenant, scope.user, status="pending")
    )


async def _merge_duplicates(
    ctx: AsyncLayerContext,
    scope: Scope,
    records: Sequence[MemoryRecord],
    report: MaintenanceReport,
    dry_run: bool,
    now: datetime,
) -> None:
    pool = sorted(
        (r for r in records if r.type in _MERGE_TYPES and not is_protected(r)),
        key=lambda r: (r.created_at, r.id),
    )
    if len(pool) < 2:
        return
    vectors = await ctx.embedder_for(scope).embed_batch([r.text for r in pool])
    keep: list[int] = []
    threshold = ctx.config.dedup_cosine
    for i, rec in enumerate(pool):
        match = next(
            (
                k
                for k in keep
                if pool[k].type is rec.type and float(vectors[k] @ vectors[i]) >= threshold
            ),
            None,
        )
        if match is None:
            keep.append(i)
            continue
        target = pool[match]
        sim = float(vectors[match] @ vectors[i])
        entry = LogEntry(
            rec.id,
            "merge",
            "consolidation",
            f"near-duplicate of {target.id} (cosine {sim:.3f})",
            sim,
            now,
        )

        async def run(t: MemoryRecord = target, r: MemoryRecord = rec, e: LogEntry = entry) -> None:
            current = await ctx.store.get(scope, t.id)
            merged = merge_provenance(current, r, ctx.clock.now())
            await ctx.replace(scope, merged, expected_version=current.version, reindex=False)
            await _soft_delete(ctx, scope, await ctx.store.get(scope, r.id), e)

        if await _apply(report, entry, dry_run, run):
            report.merged += 1


async def _gone(ctx: AsyncLayerContext, scope: Scope, report: MaintenanceReport) -> set[str]:
    """Records soft-deleted before or during this run (forgotten, deleted, merged away).
    Turns retention purged after they were summarised are not "gone": the summary and what
    else was derived from them is what was meant to remain."""
    every = await _all(ctx, scope, Filters(include_deleted=True, include_superseded=True))
    gone = {r.id for r in every if r.status is RecordStatus.DELETED}
    return gone | {e.record_id for e in report.log if e.action in ("forget", "merge")}


async def _refresh_derived(
    ctx: AsyncLayerContext,
    scope: Scope,
    gone: set[str],
    report: MaintenanceReport,
    dry_run: bool,
    now: datetime,
) -> None:
    """Clusters, episodes, automatic key entries, facts and procedures citing a gone record
    are re-derived from the sources left, or forgotten with none left (:mod:`.rederive`)."""
    done, _ = await rederive(
        ctx, scope, gone, reason="their sources were forgotten", dry_run=dry_run, now=now
    )
    for d in done:
        what = "re-derived from the sources left" if d.action == "refresh" else "no source left"
        report.log.append(
            LogEntry(
                d.record_id,
                d.action,
                "consolidation",
                f"{len(d.dropped)} source(s) of this {d.type.value} gone: {what}",
                float(len(d.dropped)),
                now,
            )
        )
        report.rederived += 1
        if d.action != "refresh":
            gone.add(d.record_id)


async def _refresh_summaries(
    ctx: AsyncLayerContext,
    scope: Scope,
    gone: set[str],
    report: MaintenanceReport,
    dry_run: bool,
    now: datetime,
) -> None:
    """Summaries citing gone turns are rewritten from the turns left."""
    for done in await refresh_stale_summaries(
        ctx, scope, gone, reason="summarised turns were forgotten", dry_run=dry_run, now=now
    ):
        n = len(done.dropped)
        report.log.append(
            LogEntry(
                done.summary_id,
                done.action if done.action == "forget" else "refresh",
                "consolidation",
                f"{n} summarised turn(s) gone: "
                + ("no turn left" if done.action == "forget" else "summarised again"),
                float(n),
                now,
            )
        )
        report.refreshed += 1


async def forget(
    ctx: AsyncLayerContext,
    scope: Scope,
    record_ids: Sequence[str],
    *,
    reason: str = "explicit request",
    audit: AsyncAuditLog | None = None,
    actor: str = "library",
) -> list[LogEntry]:
    """Explicit forget: soft-delete these records with a log entry (restorable)."""
    uscope = _user(scope)
    records = [await ctx.store.get(uscope, rid) for rid in record_ids]  # NotFound before writing
    now = ctx.clock.now()
    out = []
    for rec, d in zip(records, explicit_forget([r.id for r in records], reason), strict=True):
        entry = LogEntry(rec.id, "forget", d.policy, d.reason, d.score, now)
        event = None
        if audit is not None:
            event = audit.event(
                uscope.tenant,
                actor,
                "forget",
                user=uscope.user,
                record_ids=[rec.id],
                reason=reason,
                policy="explicit",
                score=d.score,
            )
        await _soft_delete(ctx, uscope, rec, entry, audit=audit, event=event)
        out.append(entry)
    return out


async def set_importance_by_tag(
    ctx: AsyncLayerContext,
    scope: Scope,
    tag: str,
    importance: float,
    *,
    audit: AsyncAuditLog | None = None,
    actor: str = "library",
) -> list[MemoryRecord]:
    """Batch importance change (seed 000): every current record tagged ``tag`` (redacted
    like the stored tags are, so a tag holding an address matches its placeholder)."""
    uscope = _user(scope)
    tag, importance = importance_by_tag_args(tag, importance)
    tag = ctx.redact_query(uscope, tag)
    records = await _all(ctx, uscope, Filters(tags_any=frozenset({tag})))
    updated = with_importance_by_tag(records, tag, importance, ctx.clock.now())
    for new in updated:
        await ctx.replace(uscope, new, expected_version=new.version - 1, reindex=False)
    if audit is not None and updated:
        await audit.record(
            uscope.tenant,
            actor,
            "set_importance",
            user=uscope.user,
            record_ids=[r.id for r in updated],
            reason=f"tag {tag!r}",
            details={"tag": tag, "importance": importance},
        )
    return updated


async def schedule(store: AsyncStore, scope: Scope, now: datetime, every: timedelta) -> bool:
    """Queue the user's next maintenance at ``now + every`` unless one is queued already.

    Not self-perpetuating by design: the job re-schedules itself only when it ran on time,
    so a ``flush()`` (which runs delayed jobs at once) cannot loop on it; the next
    ``end_session`` starts the cycle again."""
    pending = await store.list_jobs(scope.tenant, scope.user, status="pending")
    if any(j.kind == MAINTAIN for j in pending):
        return False
    await store.enqueue([make_maintain_job(scope, later(now, every), now)])
    return True
