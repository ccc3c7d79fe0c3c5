"""Copy one store into another through :class:`~memstrata.store.base.StoreCopy`, then verify.

Order: store meta (embedding model and dims, quota counters), the embedding cache, records
(every version, vector, terms and named counters, in insertion order), jobs (every status;
a running job's lease is cleared so it is pending again, its attempts kept), the audit log,
the server's API keys (their ids, hashes, tenants, roles, users and times: a key made on the
source authenticates on the target, a revoked one stays revoked).
Each batch is one transaction in the target and skips what the target already holds, so a
migration killed at any point is completed by running it again with ``resume=True``; no
item is ever written twice.

The target must be empty (no record, cache entry, job or audit event), unless ``resume``;
its embedding model, if it has one, must be the source's. Both are checked, and both
stores opened (their URLs, servers, schema versions and pgvector checked by opening), before
anything is written.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from typing import cast

from ...errors import EmbeddingMismatchError, StoreError, ValidationError
from ...records import MemoryRecord
from ..base import RecordDump, Store, StoreCopy
from ..url import open_store
from .digest import copied_job, record_key
from .nul import first_nul, nul_texts, part_nul_texts, watched_parts, without_nul
from .report import MigrationReport, redact_url
from .verify import verify_into

__all__ = ["copy_store", "verify_stores"]

log = logging.getLogger("memstrata.store.migrate")
Progress = Callable[[str, int], None]
_EMBEDDING_KEYS = ("embedding_model", "embedding_dims")
StoreLike = str | Store


def _open(stack: ExitStack, what: StoreLike, role: str) -> tuple[StoreCopy, str]:
    if isinstance(what, str):
        store = open_store(what)
        stack.callback(store.close)
        url = what
    else:
        store = what
        url = getattr(store, "url", type(store).__name__)
    if not isinstance(store, StoreCopy):
        raise StoreError(
            f"the {role} store {type(store).__name__} cannot be migrated: it "
            "does not implement memstrata.store.base.StoreCopy"
        )
    return store, url


def _same(a: str, b: str) -> bool:
    def norm(u: str) -> str:
        if u.lower().startswith("sqlite:///") and ":memory:" not in u:
            return "sqlite:" + os.path.realpath(u[len("sqlite:///") :])
        return u

    return norm(a) == norm(b)


def _check_target(source: StoreCopy, target: StoreCopy, resume: bool, where: str) -> None:
    src, dst = source.meta_items(), target.meta_items()
    for key in _EMBEDDING_KEYS:
        if key in src and key in dst and src[key] != dst[key]:
            raise EmbeddingMismatchError(
                f"{where} was built with {key} {dst[key]!r}, the source with {src[key]!r}; "
                "nothing was written: migrate into an empty database (or another schema), "
                "or re-embed one of them first (`memstrata reembed`)"
            )
    held = [
        kind
        for kind, dump in (
            ("records", target.dump_records),
            ("cache entries", target.dump_cache),
            ("jobs", target.dump_jobs),
            ("audit events", target.dump_audit),
            ("API keys", target.dump_keys),
        )
        if _first(dump(1))
    ]
    if held and not resume:
        raise StoreError(
            f"{where} already holds {', '.join(held)}; nothing was written: migrate into an "
            "empty database (for PostgreSQL another schema: ...?schema=NAME), or pass "
            "resume=True (--resume) to complete an interrupted migration into it: it copies "
            "only what is missing, then verifies that the target equals the source"
        )


def _first(batches: Iterator[Sequence[object]]) -> bool:
    """Whether a dump yields anything (read one batch, then close the stream)."""
    try:
        return any(batch for batch in batches)
    finally:
        close = getattr(batches, "close", None)
        if close is not None:
            close()


def copy_store(
    source: StoreLike,
    target: StoreLike,
    *,
    batch_size: int = 500,
    resume: bool = False,
    dry_run: bool = False,
    verify: bool = True,
    replace_nul: bool = False,
    progress: Progress | None = None,
) -> MigrationReport:
    """Copy everything ``source`` holds into ``target`` (URLs or open stores), then verify.

    ``dry_run`` opens and checks both stores, counts what would be copied and writes
    nothing (opening a new PostgreSQL schema or SQLite file creates its empty tables, as
    any first open does). ``verify=False`` skips the comparison (``report.ok`` is then
    false: nothing was proven). Returns a :class:`MigrationReport`; a difference found by
    the verification is in ``report.mismatches``, not an exception. Bad URLs, an occupied
    target, another embedding model: :class:`~memstrata.errors.MemstrataError` before
    anything is written.

    A record whose text holds a NUL character (written before every store refused one)
    cannot go into PostgreSQL: the copy stops at its batch with a
    :class:`~memstrata.errors.ValidationError` naming it (the batches before it are in the
    target; ``resume=True`` completes the copy), unless ``replace_nul`` stores each NUL as
    U+FFFD (``nul.py``). ``report.nul_texts`` counts such texts, a dry run included.

    A record with more than ``portability.HISTORY_PAGE`` earlier versions is read, written
    and verified a part at a time (``RecordDump.earlier``), its parts written in its
    batch's transaction: a copy killed in the middle of one leaves none of it, and
    ``resume=True`` copies it whole.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValidationError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    with ExitStack() as stack:
        src, src_url = _open(stack, source, "source")
        if isinstance(source, str) and isinstance(target, str) and _same(source, target):
            raise ValidationError(
                f"the source and the target are the same store "
                f"({redact_url(source)}); name another target"
            )
        dst, dst_url = _open(stack, target, "target")
        if src is dst:
            raise ValidationError("the source and the target are the same store")
        report = MigrationReport(
            redact_url(src_url),
            redact_url(dst_url),
            dry_run=dry_run,
            resumed=resume,
            batch_size=batch_size,
            replace_nul=replace_nul,
            target_stores_nul=dst.stores_nul,
        )
        _check_target(src, dst, resume, report.target)
        started = time.perf_counter()
        if dry_run:
            _count_only(src, report, batch_size)
        else:
            try:
                _copy(src, dst, report, batch_size, progress)
                _flush(dst)
            except StoreError as exc:  # a full disk, a server killed: part-way
                raise StoreError(
                    f"{exc}\nThe migration stopped part-way: the batches it committed stay "
                    f"in {report.target}; once the cause is mended, run it again with "
                    "--resume (resume=True): it copies only what is missing, then verifies",
                    retryable=exc.retryable,
                ) from exc
        report.copy_seconds = time.perf_counter() - started
        if verify and not dry_run:
            started = time.perf_counter()
            verify_into(src, dst, report, batch_size)
            report.verify_seconds = time.perf_counter() - started
        log.info(
            "migrate %s -> %s: %s",
            report.source,
            report.target,
            "ok" if report.ok else f"{report.mismatch_total} differences",
        )
        return report


def verify_stores(
    source: StoreLike, target: StoreLike, *, batch_size: int = 500, replace_nul: bool = False
) -> MigrationReport:
    """Compare two stores (counts per kind, a hash per record, history chain, vector,
    terms, counters, cache entry, job and audit event) without writing anything.
    ``replace_nul``: the source's NUL characters count as U+FFFD, as a copy made with
    ``replace_nul`` stored them."""
    with ExitStack() as stack:
        src, src_url = _open(stack, source, "source")
        dst, dst_url = _open(stack, target, "target")
        report = MigrationReport(
            redact_url(src_url), redact_url(dst_url), batch_size=batch_size, replace_nul=replace_nul
        )
        started = time.perf_counter()
        verify_into(src, dst, report, batch_size)
        report.verify_seconds = time.perf_counter() - started
        return report


def _flush(store: StoreCopy) -> None:
    flush = getattr(store, "flush_counters", None)
    if flush is not None:
        flush()


def _tick(progress: Progress | None, kind: str, n: int) -> None:
    if progress is not None:
        progress(kind, n)


def _copy(
    src: StoreCopy,
    dst: StoreCopy,
    report: MigrationReport,
    batch_size: int,
    progress: Progress | None,
) -> None:
    counts = report.counts
    src_meta, dst_meta = src.meta_items(), dst.meta_items()
    setter = cast(Store, dst)
    for key, value in src_meta.items():
        counts["meta"].source += 1
        if dst_meta.get(key) != value:
            setter.set_meta(key, value)
            counts["meta"].copied += 1
    _tick(progress, "meta", counts["meta"].copied)
    # The cache first: a SQLite target keeps a passage vector once, in its record, when
    # the cache already holds it (as the source did).
    for entries in src.dump_cache(batch_size):
        counts["cache"].source += len(entries)
        counts["cache"].copied += dst.load_cache(entries)
        _tick(progress, "cache", len(entries))
    log.info("cache: %d entries, %d new", counts["cache"].source, counts["cache"].copied)
    for dumps in src.dump_records(batch_size):
        counts["records"].source += len(dumps)
        dumps = _nul_checked(dumps, report)
        new = dst.load_records(dumps)  # a long history's parts are read as it writes them
        counts["records"].copied += new
        versions = sum(d.past_count for d in dumps)
        counts["versions"].source += versions
        counts["vectors"].source += sum(d.vector is not None for d in dumps)
        counts["counters"].source += sum(len(d.counters) for d in dumps)
        if new == len(dumps):
            counts["versions"].copied += versions
            counts["vectors"].copied += sum(d.vector is not None for d in dumps)
            counts["counters"].copied += sum(len(d.counters) for d in dumps)
        _tick(progress, "records", len(dumps))
    log.info("records: %d, %d new", counts["records"].source, counts["records"].copied)
    dst.finish_load()  # e.g. the HNSW index, built once over every loaded vector
    for jobs in src.dump_jobs(batch_size):
        counts["jobs"].source += len(jobs)
        counts["jobs"].copied += dst.load_jobs([copied_job(j) for j in jobs])
        _tick(progress, "jobs", len(jobs))
    for events in src.dump_audit(batch_size):
        counts["audit"].source += len(events)
        counts["audit"].copied += dst.load_audit(events)
        _tick(progress, "audit", len(events))
    for keys in src.dump_keys(batch_size):
        counts["keys"].source += len(keys)
        counts["keys"].copied += dst.load_keys(keys)
        _tick(progress, "keys", len(keys))
    log.info(
        "jobs: %d (%d new), audit events: %d (%d new), API keys: %d (%d new)",
        counts["jobs"].source,
        counts["jobs"].copied,
        counts["audit"].source,
        counts["audit"].copied,
        counts["keys"].source,
        counts["keys"].copied,
    )


def _count_only(src: StoreCopy, report: MigrationReport, batch_size: int) -> None:
    counts = report.counts
    counts["meta"].source = len(src.meta_items())
    for entries in src.dump_cache(batch_size):
        counts["cache"].source += len(entries)
    for dumps in src.dump_records(batch_size):
        counts["records"].source += len(dumps)
        report.nul_texts += sum(nul_texts(d) for d in dumps)
        for d in dumps:  # a long history, a part at a time
            report.nul_texts += sum(part_nul_texts(part) for part in d.earlier or ())
        counts["versions"].source += sum(d.past_count for d in dumps)
        counts["vectors"].source += sum(d.vector is not None for d in dumps)
        counts["counters"].source += sum(len(d.counters) for d in dumps)
    for jobs in src.dump_jobs(batch_size):
        counts["jobs"].source += len(jobs)
    for events in src.dump_audit(batch_size):
        counts["audit"].source += len(events)
    for keys in src.dump_keys(batch_size):
        counts["keys"].source += len(keys)


def _nul_checked(dumps: list[RecordDump], report: MigrationReport) -> list[RecordDump]:
    """The batch as the target can store it: NUL characters replaced if asked; otherwise
    the batch is refused, before it is written, when the target cannot hold them (a long
    history's parts are checked as the load reads them: a NUL in one refuses the batch
    inside its transaction, which writes none of it)."""
    dumps = [watched_parts(d, _part_check(d, report)) for d in dumps]
    found = [(d, n) for d in dumps if (n := nul_texts(d))]
    if found:
        report.nul_texts += sum(n for _, n in found)
        if not report.replace_nul and not report.target_stores_nul:
            d = found[0][0]
            raise _refused(d, first_nul(d.versions), report)
    if report.replace_nul:
        return [without_nul(d) for d in dumps]
    return dumps


def _part_check(d: RecordDump, report: MigrationReport) -> Callable[[list[MemoryRecord]], None]:
    def check(part: list[MemoryRecord]) -> None:
        if n := part_nul_texts(part):
            report.nul_texts += n
            if not report.replace_nul and not report.target_stores_nul:
                raise _refused(d, first_nul(part), report)

    return check


def _refused(d: RecordDump, where: str, report: MigrationReport) -> ValidationError:
    return ValidationError(
        f"record {record_key(d)} holds a NUL character in {where} (written before "
        f"every store refused one), which {report.target} cannot store in text; the copy "
        f"stopped at its batch ({report.counts['records'].copied:,} records copied before "
        "it stay in the target). Run the migration again with --resume --replace-nul "
        "(replace_nul=True) to store each NUL as U+FFFD, the replacement character; the "
        "report counts the texts changed"
    )
