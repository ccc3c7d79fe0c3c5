"""Verify a copy: read both stores through the same interface, hash, compare.

Nothing of the copy is trusted: every kind is streamed again from the source and from the
target (:class:`~memstrata.store.base.StoreCopy`), hashed the same way on both sides
(``digest.py``) and matched by key. Memory stays bounded: both streams come in the same
order when the copy is complete, so an item waits for its partner only for about a batch;
only items missing on one side (or moved) are held until the end, where each is reported.
A long history (``RecordDump.earlier``) is hashed a part at a time as it is read
(``digest.record_digest``), so a version that differs anywhere in it is found without
holding it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from itertools import zip_longest
from typing import Generic, TypeVar

from ...records import MemoryRecord
from ...scope import Scope
from ..base import Store, StoreCopy
from .digest import (
    RecordDigest,
    cache_digest,
    copied_job,
    event_digest,
    job_digest,
    meta_differences,
    record_digest,
    record_key,
)
from .nul import without_nul
from .report import KindCount, MigrationReport

__all__ = ["verify_into"]

log = logging.getLogger("memstrata.store.migrate")
_T = TypeVar("_T")
_DETAILED = 20  # record differences explained field by field
_MOD = 1 << 128


class _Matcher(Generic[_T]):
    """Pairs items of two streams by key; reports what is unpaired at the end."""

    def __init__(
        self, kind: str, report: MigrationReport, compare: Callable[[str, _T, _T], None]
    ) -> None:
        self.kind = kind
        self.report = report
        self.compare = compare
        self.left: dict[str, tuple[int, _T]] = {}
        self.right: dict[str, tuple[int, _T]] = {}
        self.positions = [0, 0]
        self.moved = 0

    def add(self, side: int, key: str, value: _T) -> None:
        pos = self.positions[side]
        self.positions[side] += 1
        mine, theirs = (self.left, self.right) if side == 0 else (self.right, self.left)
        other = theirs.pop(key, None)
        if other is None:
            mine[key] = (pos, value)
            return
        if other[0] != pos:
            self.moved += 1
        if side == 0:
            self.compare(key, value, other[1])
        else:
            self.compare(key, other[1], value)

    def finish(self) -> None:
        for key in self.left:
            self.report.add(self.kind, key, "missing in the target")
        for key in self.right:
            self.report.add(self.kind, key, "in the target only (not in the source)")
        if self.moved and not self.left and not self.right:
            self.report.add(
                self.kind,
                "*",
                f"{self.moved} items are in another order in the "
                "target (insertion order breaks ties of time and score)",
            )


def _pairs(a: Iterator[list[_T]], b: Iterator[list[_T]]) -> Iterator[tuple[list[_T], list[_T]]]:
    empty: list[_T] = []
    yield from zip_longest(a, b, fillvalue=empty)


def verify_into(
    source: StoreCopy,
    target: StoreCopy,
    report: MigrationReport,
    batch_size: int = 500,
) -> None:
    """Compare every kind; fill ``report``'s source/target counts and its mismatches.
    With ``report.replace_nul`` the source's records are compared as a copy with
    ``replace_nul`` stored them (``nul.py``)."""
    for kind in report.counts.values():
        kind.source = kind.target = 0
    _meta(source, target, report)
    _records(source, target, report, batch_size)
    _cache(source, target, report, batch_size)
    _jobs(source, target, report, batch_size)
    _audit(source, target, report, batch_size)
    _keys(source, target, report, batch_size)
    _log_counts(report)
    report.verified = True


def _meta(source: StoreCopy, target: StoreCopy, report: MigrationReport) -> None:
    src, dst = source.meta_items(), target.meta_items()
    report.counts["meta"].source, report.counts["meta"].target = len(src), len(dst)
    for line in meta_differences(src, dst):
        report.add("meta", "key", line)


def _fields(a: MemoryRecord | None, b: MemoryRecord | None) -> str:
    from ...codec import record_to_dict

    if a is None or b is None:
        return ""
    x, y = record_to_dict(a), record_to_dict(b)
    changed = sorted(k for k in x if x[k] != y.get(k))
    return f" (fields: {', '.join(changed)})" if changed else ""


def _records(
    source: StoreCopy,
    target: StoreCopy,
    report: MigrationReport,
    batch_size: int,
) -> None:
    detailed = 0
    replace_nul = report.replace_nul

    def compare(key: str, a: RecordDigest, b: RecordDigest) -> None:
        nonlocal detailed
        parts = a.differences(b)
        if not parts:
            return
        what = ", ".join(parts) + " differ"
        if "current version" in parts and detailed < _DETAILED:
            detailed += 1
            what += _explain(source, target, key)
        report.add("records", key, what)

    matcher: _Matcher[RecordDigest] = _Matcher("records", report, compare)
    counts = report.counts
    for left, right in _pairs(source.dump_records(batch_size), target.dump_records(batch_size)):
        for side, batch in ((0, left), (1, right)):
            for d in batch:
                digest = record_digest(without_nul(d) if replace_nul and side == 0 else d)
                _count(counts["records"], side, 1)
                _count(counts["versions"], side, digest.versions)
                _count(counts["vectors"], side, int(digest.has_vector))
                _count(counts["counters"], side, digest.counters)
                matcher.add(side, record_key(d), digest)
    matcher.finish()


def _count(kind: KindCount, side: int, n: int) -> None:
    if side == 0:
        kind.source += n
    else:
        kind.target += n


def _explain(source: StoreCopy, target: StoreCopy, key: str) -> str:
    tenant, user, rid = key.split("/", 2)
    try:
        scope = Scope(tenant, user)
    except Exception:  # an id the Scope checks refuse cannot be looked up again
        return ""
    found: list[MemoryRecord | None] = []
    for store in (source, target):
        got = store.get_many(scope, [rid]) if isinstance(store, Store) else []
        found.append(got[0] if got else None)
    return _fields(found[0], found[1])


def _cache(source: StoreCopy, target: StoreCopy, report: MigrationReport, batch_size: int) -> None:
    """Per user (scope token): the number of entries and the sum of their hashes."""
    sums: list[dict[str, tuple[int, int]]] = [{}, {}]
    for side, store in ((0, source), (1, target)):
        mine = sums[side]
        for batch in store.dump_cache(batch_size):
            for e in batch:
                n, acc = mine.get(e.scope_tok, (0, 0))
                mine[e.scope_tok] = (n + 1, (acc + cache_digest(e)) % _MOD)
    report.counts["cache"].source = sum(n for n, _ in sums[0].values())
    report.counts["cache"].target = sum(n for n, _ in sums[1].values())
    for tok in sorted(set(sums[0]) | set(sums[1])):
        a, b = sums[0].get(tok, (0, 0)), sums[1].get(tok, (0, 0))
        if a == b:
            continue
        what = (
            f"{a[0]} entries in the source, {b[0]} in the target"
            if a[0] != b[0]
            else "entries differ (same number, other keys or vectors)"
        )
        report.add("cache", f"user {tok}", what)


def _jobs(source: StoreCopy, target: StoreCopy, report: MigrationReport, batch_size: int) -> None:
    _by_id(
        report,
        "jobs",
        "differs (kind, payload, status, attempts or times)",
        ((j.id, job_digest(copied_job(j))) for b in source.dump_jobs(batch_size) for j in b),
        ((j.id, job_digest(j)) for b in target.dump_jobs(batch_size) for j in b),
    )


def _audit(source: StoreCopy, target: StoreCopy, report: MigrationReport, batch_size: int) -> None:
    _by_id(
        report,
        "audit",
        "event differs",
        ((e.id, event_digest(e)) for b in source.dump_audit(batch_size) for e in b),
        ((e.id, event_digest(e)) for b in target.dump_audit(batch_size) for e in b),
    )


def _keys(source: StoreCopy, target: StoreCopy, report: MigrationReport, batch_size: int) -> None:
    _by_id(
        report,
        "keys",
        "differs (hash, tenant, role, name, user, roles or times)",
        ((k.id, k.values()) for b in source.dump_keys(batch_size) for k in b),
        ((k.id, k.values()) for b in target.dump_keys(batch_size) for k in b),
    )


def _by_id(
    report: MigrationReport,
    kind: str,
    what: str,
    left: Iterator[tuple[str, _T]],
    right: Iterator[tuple[str, _T]],
) -> None:
    """Pair two streams of (id, digest) in the same order, count them, name differences."""

    def compare(key: str, a: _T, b: _T) -> None:
        if a != b:
            report.add(kind, key, what)

    matcher: _Matcher[_T] = _Matcher(kind, report, compare)
    counts = report.counts[kind]
    for a, b in zip_longest(left, right):
        if a is not None:
            counts.source += 1
            matcher.add(0, *a)
        if b is not None:
            counts.target += 1
            matcher.add(1, *b)
    matcher.finish()


def _log_counts(report: MigrationReport) -> None:
    log.info("verified %s", {k: (c.source, c.target) for k, c in report.counts.items()})
