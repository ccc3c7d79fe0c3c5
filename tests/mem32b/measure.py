"""Before/after timings of tests/mem32b (run by hand:
``PYTHONPATH=src python -m tests.mem32b.measure``): ``redact_subject`` of a user of 10
events beside N other users' events, the walk of every event (oracle.py) and the index."""

from __future__ import annotations

import statistics
import sys
import time
from datetime import timedelta

from tests.mem32.test_cost import CAROL, T0, _write

from memstrata.audit_backends import InMemoryAudit
from memstrata.filters import Filters
from memstrata.scope import Scope
from memstrata.store.memory import InMemoryStore
from memstrata.store.memory_dump import load_audit, load_keys

from .oracle import WalkedAudit, walked_count, walked_load_audit, walked_load_keys
from .test_audit_redaction import _event
from .test_caller_count import DAVE
from .test_dump_load import _key


def redact(cls: type[InMemoryAudit], others: int) -> float:
    times = []
    for _ in range(5):
        log = cls(in_transactions=True)
        events = [_event(i, "acme", f"other{i % 50}", f"other{i % 50}") for i in range(others)]
        events += [_event(others + i, "acme", "ann", "ann") for i in range(10)]
        log.append_audit(events)
        t = time.perf_counter()
        log.redact_subject("acme", "ann")
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def append(cls: type[InMemoryAudit], n: int) -> float:
    events = [_event(i, "acme", f"other{i % 50}", f"other{i % 50}") for i in range(n)]
    times = []
    for _ in range(5):
        log = cls(in_transactions=True)
        t = time.perf_counter()
        for e in events:
            log.append_audit([e])
        times.append(time.perf_counter() - t)
    return statistics.median(times) / n * 1e6


def count(others: int) -> str:
    """carol's count of bob's 1,000 notes shared with her beside ``others`` shared with
    dave: all, the last tenth by time, 3 ids (median of 20 each), before and after."""
    store = InMemoryStore()
    store.insert([_write(i, "bob", access=DAVE) for i in range(others)])
    store.insert([_write(others + i, "bob", access=CAROL) for i in range(1_000)])
    carol = Scope("t", "bob").as_caller("carol")
    store.count(carol, Filters())
    since = Filters(observed_after=T0 + timedelta(seconds=others + 900))
    ids = Filters(ids=frozenset(f"bob-{others + i}" for i in range(3)))
    out = []
    for f in (Filters(), since, ids):
        for fn in (walked_count, InMemoryStore.count):
            times = []
            for _ in range(20):
                t = time.perf_counter()
                fn(store, carol, f)
                times.append(time.perf_counter() - t)
            out.append(f"{statistics.median(times) * 1000:.3f}")
    return " / ".join(out)


def loads(held: int) -> str:
    """A load of 10 key rows and of 10 audit events into a store holding ``held`` of each
    (median of 20): before (every held hash / id gathered) and after."""
    out = []
    for fn in (walked_load_keys, None):
        store = InMemoryStore()
        load_keys(store, [_key(i, f"u{i % 50}") for i in range(held)])
        times = []
        for r in range(20):
            brought = [_key(held + 10 * r + i, "ann") for i in range(10)]
            t = time.perf_counter()
            if fn is None:
                load_keys(store, brought)
            else:
                fn(store._key_rows, brought)
            times.append(time.perf_counter() - t)
        out.append(f"{statistics.median(times) * 1000:.3f}")
    for fn2 in (walked_load_audit, None):
        store = InMemoryStore()
        load_audit(store, [_event(i, "t", "u", "u") for i in range(held)])
        times = []
        for r in range(20):
            ev = [_event(held + 10 * r + i, "t", "ann", "ann") for i in range(10)]
            t = time.perf_counter()
            if fn2 is None:
                load_audit(store, ev)
            else:
                fn2(store.audit_log._events, ev)
            times.append(time.perf_counter() - t)
        out.append(f"{statistics.median(times) * 1000:.3f}")
    return " / ".join(out)


if __name__ == "__main__":
    for held in (1_000, 10_000, 100_000):
        print(f"load 10 beside {held:,} (keys, events; before, after ms):", loads(held))
    for others in (1_000, 10_000):
        print(f"count beside {others:,} (all, since, ids; before, after ms):", count(others))
    for others in [int(a) for a in sys.argv[1:]] or [1_000, 10_000, 100_000]:
        print(
            f"redact beside {others:,}: walk {redact(WalkedAudit, others):.3f} ms, "
            f"index {redact(InMemoryAudit, others):.3f} ms; append one event: "
            f"{append(WalkedAudit, 20_000):.2f} µs before, "
            f"{append(InMemoryAudit, 20_000):.2f} µs after"
        )
