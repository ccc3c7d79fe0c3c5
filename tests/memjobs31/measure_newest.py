"""Run by hand: ``PYTHONPATH=src python tests/memjobs31/measure_newest.py``.

1. Through ``Memory("memory://", embedder=HashingEmbedder(), background=False)``: 10 users
   of one tenant, the owner with *n* turns (sessions of 500, ``add_messages``), nine others
   with 1,000 each; then ``add_message`` in a new session of the owner and ``search``
   alternated 30 times: median (and the add_message's alone) and total.
2. An ``InMemoryStore`` with *n* finished jobs (of 10 users: enqueued, claimed, finished or
   failed one at a time), then one new job's enqueue + claim + finish, ``count_open_jobs``,
   ``list_jobs(status="pending")`` and ``stats``, 30 times: median of each."""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from memstrata import Memory
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.jobs import Job
from memstrata.records import Message, Role
from memstrata.scope import Scope
from memstrata.store.memory import InMemoryStore

WORDS = "harbour river stone lantern orchard copper violet meadow signal ember".split()
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _text(i: int) -> str:
    return " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7)) + f" {i}?"


def _turns(mem: Memory, scope: Scope, n: int) -> None:
    for start in range(0, n, 500):
        session = scope.with_session(f"old{start // 500}")
        role = [Role.USER, Role.ASSISTANT]
        mem.add_messages(
            session,
            [Message(role[i % 2], _text(i)) for i in range(start, min(n, start + 500))],
        )


def turns(n: int) -> None:
    mem = Memory("memory://", embedder=HashingEmbedder(), background=False)
    try:
        owner = Scope("acme", "u0")
        _turns(mem, owner, n)
        for u in range(1, 10):
            _turns(mem, Scope("acme", f"u{u}"), 1000)
        now = owner.with_session("now")
        times, adds = [], []
        for k in range(30):
            t = time.perf_counter()
            mem.add_message(now, Role.USER, _text(k + 7))
            adds.append(time.perf_counter() - t)
            mem.search(owner, "harbour lantern", top_k=5)
            times.append(time.perf_counter() - t)
        print(
            f"{n:>6} turns of the owner (+9,000 others): add_message+search median "
            f"{statistics.median(times) * 1000:7.2f} ms (the add_message "
            f"{statistics.median(adds) * 1000:6.2f} ms), 30 steps {sum(times):6.2f} s"
        )
    finally:
        mem.close()


def _job(i: str, user: str, at: datetime) -> Job:
    return Job(id=i, kind="k", tenant="t", user=user, payload={}, created_at=at, run_after=at)


def _median_ms(call: Callable[[], object]) -> float:
    times = []
    for _ in range(30):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def jobs(n: int) -> None:
    store = InMemoryStore()
    for i in range(n):
        user = f"u{i % 10}"
        store.enqueue([_job(f"old{i}", user, T0)])
        (j,) = store.claim_jobs(T0, limit=1, lease_seconds=30, tenant="t", user=user)
        if i % 10:
            store.finish_job(j.id, j.lease_token)
        else:
            store.fail_job(j.id, "boom", None, j.lease_token)
    count = [0]

    def one() -> None:
        count[0] += 1
        at = T0 + timedelta(seconds=count[0])
        store.enqueue([_job(f"new{count[0]}", "u0", at)])
        (j,) = store.claim_jobs(at, limit=1, lease_seconds=30)
        store.finish_job(j.id, j.lease_token)

    store.enqueue([_job("waiting", "u1", T0 + timedelta(days=1))])
    listed = _median_ms(lambda: store.list_jobs("t", "u1", status="pending"))
    print(
        f"{n:>6} finished jobs: enqueue+claim+finish {_median_ms(one):6.3f} ms, "
        f"count_open_jobs {_median_ms(lambda: store.count_open_jobs()):6.3f} ms, "
        f"list_jobs(pending) {listed:6.3f} ms, "
        f"stats {_median_ms(lambda: store.stats(Scope('t', 'u1'))):6.3f} ms"
    )


def main() -> None:
    """Arguments: the numbers of finished jobs (default 1,000 10,000; each is filled one
    claim at a time, so a large one takes long before memjobs31)."""
    for n in [int(a) for a in sys.argv[1:]] or [1000, 10_000]:
        jobs(n)
    for n in (100, 1000, 10_000):
        turns(n)


if __name__ == "__main__":
    main()
