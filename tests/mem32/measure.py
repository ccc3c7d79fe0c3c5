"""By hand: what memory:// walks and how long it takes for a user's purge, the index of
readers after purges, and a caller's pages (docs/measurements.md, "Session 32: ... (mem32)").

Run with this branch's ``src`` and with an older one's on ``PYTHONPATH`` to compare; it
reads no internal structure that changed (rows walked are counted by wrapping each dict the
purge may walk in a subclass of its own type, records looked at by counting
``MemoryRecord.visible_in``)::

    PYTHONPATH=src python tests/mem32/measure.py 10000
"""

from __future__ import annotations

import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from memstrata.filters import Filters
from memstrata.quota_types import day_take, lease_key
from memstrata.records import AccessControl, Content, MemoryRecord, RecordType, Visibility
from memstrata.scope import Scope
from memstrata.store import RecordWrite
from memstrata.store.key_rows import KeyRow
from memstrata.store.memory import InMemoryStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CAROL = AccessControl(Visibility.SHARED, allowed_users=("carol",))
OTHERS = 9  # other users of 1,000 records each


def _write(i: int, user: str, **kw: Any) -> RecordWrite:
    when = T0 + timedelta(seconds=i)
    r = MemoryRecord(
        id=f"{user}-{i}",
        tenant="t",
        user=user,
        type=kw.pop("type", RecordType.NOTE),
        content=Content(f"note {i} of {user}"),
        created_at=when,
        updated_at=when,
        observed_at=when,
        content_hash=f"h-{user}-{i}",
        **kw,
    )
    return RecordWrite(r, None, ("note",))


def _fill(store: InMemoryStore, user: str, n: int, access: AccessControl = CAROL) -> None:
    """``n`` records (facts citing the first, each superseded by the next), one cache
    entry each, 8 day counters, a lease, 10 key rows."""
    store.insert([_write(0, user, access=access)])
    for start in range(1, n, 1000):
        store.insert(
            [
                _write(
                    i,
                    user,
                    type=RecordType.FACT,
                    source_ids=(f"{user}-0",),
                    superseded_by=f"{user}-{i + 1}",
                    access=access,
                )
                for i in range(start, min(n, start + 1000))
            ]
        )
    scope = Scope("t", user)
    store.cache_vectors(scope, "m", {f"h-{user}-{i}": np.ones(8, np.float32) for i in range(n)})
    store.take_counters(
        [day_take("records", "t", user, T0 + timedelta(days=d), 1, None) for d in range(8)]
    )
    store.lease(lease_key(scope, tenant_wide=False), "tok", 0, 10)
    store.load_keys(
        [
            KeyRow(f"{user}{i}", f"h{user}{i}", "t", "user", "n", "x", None, user, "")
            for i in range(10)
        ]
    )


def _counting(obj: Any, seen: list[int]) -> Any:
    base = type(obj)

    class Counted(base):  # type: ignore[valid-type, misc]
        def __iter__(self) -> Any:
            for key in base.__iter__(self):
                seen[0] += 1
                yield key

        def keys(self) -> Any:
            return list(iter(self))

        def values(self) -> Any:
            return [self[k] for k in self]

        def items(self) -> Any:
            return [(k, self[k]) for k in self]

    counted = Counted.__new__(Counted)
    if isinstance(obj, dict):
        dict.update(counted, obj)
    else:
        counted.__dict__.update(obj.__dict__)
    return counted


def _store(owner: int) -> InMemoryStore:
    store = InMemoryStore()
    _fill(store, "bob", owner)
    for u in range(OTHERS):
        _fill(store, f"other{u}", 1000)
    return store


def purges(owner: int, rounds: int = 5) -> None:
    """A purge of a user of 10 records beside bob's ``owner`` and 9,000 of others (rows of
    the parts a purge deletes walked, time), then bob's own purge."""
    walked, times = [], []
    store = _store(owner)
    for n in range(rounds):
        _fill(store, f"small{n}", 10)
        seen = [0]
        for name in ("_cache", "_cites", "_links", "_meta", "_key_rows"):
            setattr(store, name, _counting(getattr(store, name), seen))
        start = time.perf_counter()
        store.purge_user("t", f"small{n}")
        times.append(time.perf_counter() - start)
        walked.append(seen[0])
    print(
        f"purge_user of 10 records beside {owner} + {OTHERS * 1000}: rows walked {walked}, "
        f"median {statistics.median(times) * 1000:.2f} ms"
    )
    start = time.perf_counter()
    report = store.purge_user("t", "bob")
    print(
        f"purge_user of bob's {report.records} records: rows walked "
        f"{seen[0] - walked[-1]}, {(time.perf_counter() - start) * 1000:.1f} ms"
    )


def readers(owner: int) -> None:
    """bob's ``owner`` records shared with carol, purged by ids in 10 calls: what carol's
    entry of the index of readers holds after."""
    store = InMemoryStore()
    _fill(store, "bob", owner)
    ids = [f"bob-{i}" for i in range(owner)]
    start = time.perf_counter()
    for part in range(0, owner, owner // 10):
        store.purge(Scope("t", "bob"), ids[part : part + owner // 10])
    took = time.perf_counter() - start
    held = sum(len(v) for v in store._readers.values())
    print(f"readers index after purging {owner} shared records: {held} entries ({took:.2f} s)")


def pages(owner: int, rounds: int = 30) -> None:
    """carol's pages of bob's ``owner`` shared records (beside 9,000 of others), each after
    a write of bob's: records looked at and time of one write + 3 pages."""
    store = InMemoryStore()
    for start in range(0, owner, 1000):  # notes, none superseded: every one is listed
        store.insert([_write(i, "bob", access=CAROL) for i in range(start, start + 1000)])
    for u in range(OTHERS):
        _fill(store, f"other{u}", 1000)
    carol = Scope("t", "bob").as_caller("carol")
    store.list(carol, Filters(), limit=1)
    seen = [0]
    visible_in = MemoryRecord.visible_in

    def counted(self: MemoryRecord, scope: Scope) -> bool:
        seen[0] += 1
        return visible_in(self, scope)

    MemoryRecord.visible_in = counted  # type: ignore[method-assign]
    times, looked = [], []
    try:
        for n in range(rounds):
            seen[0] = 0
            start = time.perf_counter()
            store.insert([_write(owner + 1 + n, "bob", access=CAROL)])
            store.list(carol, Filters(), limit=10)
            store.list(carol, Filters(), limit=10, offset=20, newest_first=False)
            store.list_after(carol, Filters(), f"bob-{owner // 2}", limit=10)
            times.append(time.perf_counter() - start)
            looked.append(seen[0])
    finally:
        MemoryRecord.visible_in = visible_in  # type: ignore[method-assign]
    print(
        f"caller pages beside {owner} shared: looked at {statistics.median(looked):.0f} "
        f"records, median {statistics.median(times) * 1000:.2f} ms (write + 3 pages)"
    )


if __name__ == "__main__":
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    purges(size)
    readers(size)
    pages(size)
