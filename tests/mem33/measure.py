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
        "one record's events": AuditQuery(record_id=mine[-1].record_ids[0]),
        "the tenant's oldest 100": AuditQuery(limit=100),
        "the tenant's last hour, 100": AuditQuery(since=events[-3600].at, limit=100),
    }
    logs = {}
    for name, cls in (("before", OldAudit), ("after", InMemoryAudit)):
        appends = []
        for _ in range(3):
            log: Any = cls(in_transactions=True)
            t = timeit.default_timer()
            for e in events:
                log.append_audit([e])
            appends.append((timeit.default_timer() - t) / n * 1e6)
        logs[name] = log
        print(f"{name}: append one by one, median of 3: {statistics.median(appends):.2f} µs")
    for label, q in queries.items():
        got = [logs[k].query_audit("acme", q) for k in ("before", "after")]
        assert got[0] == got[1], label
        times = [
            _median_ms(lambda log=logs[k], q=q: log.query_audit("acme", q), repeat=reps)
            for k, reps in (("before", 5), ("after", 20))
        ]
        print(f"{label}: {len(got[1])} events, before {times[0]:.3f} ms, after {times[1]:.4f} ms")


def main() -> None:
    what = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    {"audit": audit}[what](n)


if __name__ == "__main__":
    main()
