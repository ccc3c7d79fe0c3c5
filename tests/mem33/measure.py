"""Before/after timings of tests/mem33 (run by hand, from the worktree:
``PYTHONPATH=src python -m tests.mem33.measure audit|count|claim [N]``); "before" is the code
of main 5ecb98d kept in tests/mem33/oracle.py, run on the same data in the same process."""

from __future__ import annotations

import statistics
import sys
import timeit
from collections.abc import Callable
from typing import Any

from memstrata.audit_backends import InMemoryAudit
from memstrata.audit_types import AuditQuery

from .oracle import OldAudit
from .test_audit_query import _event


def _median_ms(fn: Callable[[], Any], number: int = 1, repeat: int = 20) -> float:
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1000


def audit(n: int) -> None:
    """``n`` events of 100 users (``u0``..``u99``) of tenant acme, two thirds of them
    ``set_access``, each naming one record; then a page of each query (median of 20)."""
    events = [
        _event(i, "acme", f"u{i % 100}", f"u{i % 100}", action="set_access" if i % 3 else "add")
        for i in range(n)
    ]
    mine = [e for e in events if e.user == "u7"]
    queries = {
        "u7's newest 50 (since)": AuditQuery(user="u7", since=mine[-50].at, limit=50),
        "u7's oldest 50": AuditQuery(user="u7", limit=50),
        "u7's 50 after a cursor in the middle": AuditQuery(
            user="u7", after=mine[len(mine) // 2].id, limit=50
        ),
        "u7's add events, 50": AuditQuery(user="u7", action="add", limit=50),
        "one record of u7's, its events": AuditQuery(user="u7", record_id=mine[5].record_ids[0]),
        "one record's events, no user (the tenant's lane)": AuditQuery(
            record_id=mine[-1].record_ids[0]
        ),
        "the tenant's oldest 100": AuditQuery(limit=100),
        "the tenant's last hour, 100": AuditQuery(since=events[-3600].at, limit=100),
    }
    logs: dict[str, Any] = {}
    appends: dict[str, list[float]] = {"before": [], "after": []}
    for _ in range(5):  # alternated: the machine's load moves
        for name, cls in (("before", OldAudit), ("after", InMemoryAudit)):
            log: Any = cls(in_transactions=True)
            t = timeit.default_timer()
            for e in events:
                log.append_audit([e])
            appends[name].append((timeit.default_timer() - t) / n * 1e6)
            logs[name] = log
    for name, times in appends.items():
        print(
            f"{name}: append one by one, 5 runs alternated: min {min(times):.2f} µs, "
            f"median {statistics.median(times):.2f} µs"
        )
    for label, q in queries.items():
        got = [logs[k].query_audit("acme", q) for k in ("before", "after")]
        assert got[0] == got[1], label
        times = [
            _median_ms(lambda log=logs[k], q=q: log.query_audit("acme", q), repeat=reps)
            for k, reps in (("before", 5), ("after", 20))
        ]
        print(f"{label}: {len(got[1])} events, before {times[0]:.3f} ms, after {times[1]:.4f} ms")


def _bob(n: int) -> Any:
    """bob's ``n`` notes of session s2 tagged ``x`` and 1,000 facts of session s1 tagged
    ``t1``, all shared with carol; carol and four other callers have listed once."""
    from tests.mem32.test_cost import CAROL, _write

    from memstrata.filters import Filters
    from memstrata.records import AccessControl, RecordType, Visibility
    from memstrata.scope import Scope
    from memstrata.store.memory import InMemoryStore

    store = InMemoryStore()
    store.insert([_write(i, "bob", access=CAROL, session="s2", tags=("x",)) for i in range(n)])
    store.insert(
        [
            _write(n + i, "bob", access=CAROL, type=RecordType.FACT, session="s1", tags=("t1",))
            for i in range(1_000)
        ]
    )
    everyone = AccessControl(Visibility.PUBLIC)
    store.insert([_write(n + 1_000, "bob", access=everyone)])
    for caller in ("carol", "dave", "erin", "frank", "gina"):
        store.list(Scope("t", "bob").as_caller(caller), Filters(), limit=10)
    return store


def count(n: int) -> None:
    """carol's counts of bob's 1,000 facts beside ``n`` notes shared with her (median of
    20 after, 5 before: main's walk of her whole order, oracle.py ``old_count``)."""
    from datetime import timedelta

    from tests.mem32.test_cost import T0

    from memstrata.filters import Filters
    from memstrata.records import RecordType
    from memstrata.scope import Scope

    from .oracle import old_count

    store = _bob(n)
    carol = Scope("t", "bob").as_caller("carol")
    facts = frozenset({RecordType.FACT})
    cases = {
        "types {fact}": (carol, Filters(types=facts)),
        "session s1": (Scope("t", "bob", session="s1").as_caller("carol"), Filters()),
        "tags_any {t1}": (carol, Filters(tags_any=frozenset({"t1"}))),
        "types {fact}, the last 100 by time": (
            carol,
            Filters(types=facts, observed_after=T0 + timedelta(seconds=n + 900)),
        ),
        "all (no filter)": (carol, Filters()),
    }
    for label, (scope, f) in cases.items():
        got = store.count(scope, f)
        assert got == old_count(store, scope, f), label
        before = _median_ms(lambda s=scope, f=f: old_count(store, s, f), repeat=5)
        after = _median_ms(lambda s=scope, f=f: store.count(s, f))
        print(f"{label}: {got}, before {before:.3f} ms, after {after:.4f} ms")


def write(n: int) -> None:
    """An insert of one note shared with carol by bob of :func:`_bob`'s records (five
    callers' orders kept), median of 200 (run on main's tree for before)."""
    from tests.mem32.test_cost import CAROL, _write

    from memstrata.scope import Scope
    from memstrata.store.memory import InMemoryStore

    store: InMemoryStore = _bob(n)
    assert len(store._sharing("t", "bob").orders) == 5
    times = []
    for i in range(200):
        w = _write(n + 2_000 + i, "bob", access=CAROL, session="s3", tags=("y", "z"))
        t = timeit.default_timer()
        store.insert([w])
        times.append(timeit.default_timer() - t)
    print(f"insert of one shared note, median of 200: {statistics.median(times) * 1e6:.1f} µs")
    del Scope


def claim(n: int) -> None:
    """``n`` users' pending jobs due before ann's; ann's job enqueued, claimed by user
    alone and finished (median of 200), her open count; and what enqueueing the ``n`` jobs
    cost a job, before (oracle.py ``OldJobIndex``: main's groups) and after."""
    from datetime import timedelta

    from memstrata.store.memory import InMemoryStore

    from .oracle import OldJobIndex
    from .test_claim_by_user import T0, _job

    jobs = [_job(i, "acme", f"u{i}", 0) for i in range(n)]
    now = T0 + timedelta(seconds=60)
    for name, old in (("before", True), ("after", False)):
        store = InMemoryStore()
        if old:
            store._jobs = OldJobIndex()
        t = timeit.default_timer()
        for start in range(0, n, 1000):
            store.enqueue(jobs[start : start + 1000])
        enqueue = (timeit.default_timer() - t) / n * 1e6
        times, k = [], n

        def step(store: InMemoryStore = store) -> None:
            nonlocal k
            store.enqueue([_job(k, "acme", "ann", 10)])
            (job,) = store.claim_jobs(now, limit=5, lease_seconds=30, user="ann")
            store.finish_job(job.id, job.lease_token)
            k += 1

        times = timeit.repeat(step, number=1, repeat=200)
        count = _median_ms(lambda s=store: s.count_open_jobs(user="ann"))
        print(
            f"{name}: enqueue {enqueue:.2f} µs a job (batches of 1,000); ann's enqueue+claim+"
            f"finish {statistics.median(times) * 1000:.3f} ms; her open count {count:.4f} ms"
        )


def delete(n: int) -> None:
    """``Memory.delete`` on memory:// (one audit event each) with ``n`` events in the log
    already (other users'), median of 300 (run on main's tree for before)."""
    from memstrata import Memory, Scope
    from memstrata.embedder.hashing import HashingEmbedder

    mem = Memory("memory://", embedder=HashingEmbedder(), background=False)
    log = mem._store.audit_log
    log.append_audit([_event(i, "t", f"u{i % 100}", f"u{i % 100}", id=f"x{i}") for i in range(n)])
    scope = Scope("t", "ann")
    ids = [mem.add(scope, f"note {i} about tea").id for i in range(300)]
    left = iter(ids)
    times = timeit.repeat(lambda: mem.delete(scope, next(left)), number=1, repeat=300)
    print(f"Memory.delete, median of 300: {statistics.median(times) * 1e6:.1f} µs")
    mem.close()


def main() -> None:
    what = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    {"audit": audit, "count": count, "write": write, "claim": claim, "delete": delete}[what](n)


if __name__ == "__main__":
    main()
