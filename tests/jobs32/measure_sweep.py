"""Measure the retention of done jobs and memory://'s claims by session or tenant alone
(jobs32; docs/measurements.md). Run from the worktree:

    PYTHONPATH=src python tests/jobs32/measure_sweep.py [sqlite|memory|postgresql ...]

With the src of a commit before jobs32 on PYTHONPATH it measures the same calls there
(no sweep: ``jobs_swept`` is reported as '-')."""

from __future__ import annotations

import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memstrata import FixedClock, Memory, Scope
from memstrata.jobs import Job, JobStatus
from memstrata.store.memory import InMemoryStore

FILTERS: list[dict[str, Any]] = [{"session": "s"}, {"tenant": "t"}]
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
DONE = 10_000


def _job(i: int, at: datetime, status: JobStatus, session: str | None = None, **kw: str) -> Job:
    return Job(
        id=f"j{i:06d}-{uuid.uuid4().hex[:6]}",
        kind="k",
        tenant=kw.get("tenant", "t"),
        user=kw.get("user", f"u{i % 100}"),
        payload={},
        session=session,
        created_at=at,
        run_after=at,
        status=status,
    )


def _url(kind: str) -> str:
    if kind == "memory":
        return "memory://"
    if kind == "sqlite":
        return f"sqlite:///{tempfile.mkdtemp()}/m.db"
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import servers

    return servers.postgres().url("m_" + uuid.uuid4().hex[:12])


def maintain_passes(kind: str) -> None:
    """Maintain passes over a store holding 10,000 done jobs due 30 days ago (100 users)."""
    url = _url(kind)
    with Memory(url, embedder="hashing", clock=FixedClock(NOW), background=False) as mem:
        store = getattr(mem.store, "durable", mem.store)
        done = [_job(i, NOW - timedelta(days=30), JobStatus.DONE) for i in range(DONE)]
        for i in range(0, DONE, 1000):
            store.enqueue(done[i : i + 1000])
        mem.maintain(Scope("t", "warm"))  # warm (sweeps the first batches after jobs32)
        out = []
        for n in range(3):
            t = time.perf_counter()
            report = mem.maintain(Scope("t", f"p{n}"))
            ms = (time.perf_counter() - t) * 1000
            out.append(f"{ms:.1f} ms ({getattr(report, 'jobs_swept', '-')})")
        left = sum(len(store.list_jobs("t", f"u{u}", status="done")) for u in range(100))
        print(f"{kind}: maintain passes after a warm one: {', '.join(out)}; done left {left}")


def sweep_cost(kind: str) -> None:
    """One sweep batch of 1,000 among 10,000 done jobs (5,000 past the retention)."""
    url = _url(kind)
    with Memory(url, embedder="hashing", clock=FixedClock(NOW), background=False) as mem:
        store = getattr(mem.store, "durable", mem.store)
        if not hasattr(store, "sweep_done_jobs"):
            print(f"{kind}: no sweep_done_jobs")
            return
        for i in range(0, DONE, 1000):
            store.enqueue(
                [
                    _job(k, NOW - timedelta(days=30 if k % 2 else 1), JobStatus.DONE)
                    for k in range(i, i + 1000)
                ]
            )
        times = []
        for _ in range(5):
            t = time.perf_counter()
            n = store.sweep_done_jobs(NOW - timedelta(days=7), 1000)
            times.append((time.perf_counter() - t) * 1000)
            assert n == 1000
        t = time.perf_counter()
        assert store.sweep_done_jobs(NOW - timedelta(days=7), 1000) == 0
        empty = (time.perf_counter() - t) * 1000
        print(
            f"{kind}: sweep of 1,000 among 10,000 done: "
            + ", ".join(f"{x:.1f}" for x in times)
            + f" ms; nothing left to sweep (5,000 kept): {empty:.2f} ms"
        )


def memory_claims() -> None:
    """A claim by session alone and by tenant alone beside 10,000 pending jobs of 1,000
    users of another tenant due earlier: jobs walked and time per claim."""
    store = InMemoryStore()
    early = NOW - timedelta(hours=1)
    store.enqueue(
        [
            _job(
                n,
                early + timedelta(seconds=n),
                JobStatus.PENDING,
                f"x{n % 100}",
                tenant="other",
                user=f"o{n % 1000}",
            )
            for n in range(10_000)
        ]
    )
    for kw in FILTERS:
        times, walked = [], []
        for n in range(20):
            store.enqueue([_job(100_000 + n, NOW, JobStatus.PENDING, "s", user="me")])
            before = store._jobs.walked
            t = time.perf_counter()
            (j,) = store.claim_jobs(NOW + timedelta(minutes=1), limit=1, lease_seconds=30, **kw)
            times.append((time.perf_counter() - t) * 1000)
            walked.append(store._jobs.walked - before)
            store.finish_job(j.id, j.lease_token)
        times.sort()
        print(
            f"memory claim by {next(iter(kw))} alone: walked {walked[0]}, "
            f"median {times[len(times) // 2]:.3f} ms"
        )
        store.enqueue([_job(200_000, NOW, JobStatus.PENDING, "s", user="me")])
        before = store._jobs.walked
        t = time.perf_counter()
        assert store.count_open_jobs(**kw) == 1
        ms = (time.perf_counter() - t) * 1000
        print(
            f"  count_open_jobs by {next(iter(kw))} alone: walked "
            f"{store._jobs.walked - before}, {ms:.3f} ms"
        )
        (j,) = store.claim_jobs(NOW + timedelta(minutes=1), limit=1, lease_seconds=30, **kw)
        store.finish_job(j.id, j.lease_token)


if __name__ == "__main__":
    kinds = sys.argv[1:] or ["sqlite", "memory"]
    for kind in kinds:
        maintain_passes(kind)
        sweep_cost(kind)
    memory_claims()
