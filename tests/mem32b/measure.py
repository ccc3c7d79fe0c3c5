"""Before/after timings of tests/mem32b (run by hand:
``PYTHONPATH=src python -m tests.mem32b.measure``): ``redact_subject`` of a user of 10
events beside N other users' events, the walk of every event (oracle.py) and the index."""

from __future__ import annotations

import statistics
import sys
import time

from memstrata.audit_backends import InMemoryAudit

from .oracle import WalkedAudit
from .test_audit_redaction import _event


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


if __name__ == "__main__":
    for others in [int(a) for a in sys.argv[1:]] or [1_000, 10_000, 100_000]:
        print(
            f"redact beside {others:,}: walk {redact(WalkedAudit, others):.3f} ms, "
            f"index {redact(InMemoryAudit, others):.3f} ms; append one event: "
            f"{append(WalkedAudit, 20_000):.2f} µs before, "
            f"{append(InMemoryAudit, 20_000):.2f} µs after"
        )
