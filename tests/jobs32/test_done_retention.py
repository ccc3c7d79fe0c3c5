"""Finished jobs go after a retention (jobs32): ``maintain``'s store-wide sweep deletes
``done`` jobs due more than ``Retention.done_jobs_days`` (7) days ago, in batches, on
SQLite, PostgreSQL and memory://. Failed jobs, pending and running ones (however old their
``run_after``), and done jobs younger than the retention stay. Before, no job was deleted
before its user's purge: every store kept a row per job for ever (these tests fail there:
``jobs_swept`` did not exist and the old done jobs were still listed)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memstrata import FixedClock, Memory, Scope
from memstrata.errors import ValidationError
from memstrata.jobs import DONE_SWEEP_BATCH, Job, JobStatus
from memstrata.maintenance import Retention
from memstrata.server.dto import MaintenanceOut

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
OLD = NOW - timedelta(days=30)


@pytest.fixture(params=["sqlite", "memory", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "postgresql":
        yield request.getfixturevalue("pg_url")
    else:
        yield f"sqlite:///{tmp_path / 'm.db'}" if request.param == "sqlite" else "memory://"


def _durable(mem: Memory) -> Any:
    return getattr(mem.store, "durable", mem.store)


def job(
    i: str, user: str, run_after: datetime, status: JobStatus = JobStatus.PENDING, **kw: Any
) -> Job:
    return Job(
        id=i,
        kind="k",
        tenant="t",
        user=user,
        payload={},
        created_at=run_after,
        run_after=run_after,
        status=status,
        **kw,
    )


def _run(store: Any, jobs: list[Job], at: datetime, *, fail: bool = False) -> None:
    """Enqueue, claim and finish (or give up on) each job, as a worker does."""
    for j in jobs:
        store.enqueue([j])
        (claimed,) = store.claim_jobs(at, limit=1, lease_seconds=30, tenant="t", user=j.user)
        if fail:
            store.fail_job(claimed.id, "boom", None, claimed.lease_token)
        else:
            store.finish_job(claimed.id, claimed.lease_token)


def _ids(store: Any, status: str) -> set[str]:
    return {j.id for u in ("u0", "u1", "u9") for j in store.list_jobs("t", u, status=status)}


def test_maintain_sweeps_old_done_jobs_and_keeps_every_other(url: str) -> None:
    with Memory(url, embedder="hashing", clock=FixedClock(NOW), background=False) as mem:
        store = _durable(mem)
        old = [job(f"old-{i}", f"u{i % 2}", OLD + timedelta(minutes=i)) for i in range(30)]
        _run(store, old, OLD + timedelta(hours=1))
        young_at = NOW - timedelta(days=6)
        _run(store, [job(f"young-{i}", "u1", young_at) for i in range(5)], young_at)
        _run(store, [job(f"failed-{i}", "u0", OLD) for i in range(4)], OLD, fail=True)
        # open jobs due long ago: one pending, one running under a live lease
        store.enqueue([job("pending", "u9", OLD - timedelta(days=60))])
        store.enqueue([job("running", "u9", OLD - timedelta(days=90))])
        (running,) = store.claim_jobs(NOW, limit=1, lease_seconds=3600, tenant="t", user="u9")
        assert running.id == "running"

        dry = mem.maintain(Scope("t", "u0"), dry_run=True)
        assert dry.jobs_swept == 0 and len(_ids(store, "done")) == 35
        kept = mem.maintain(Scope("t", "u0"), retention=Retention(done_jobs_days=None))
        assert kept.jobs_swept == 0 and len(_ids(store, "done")) == 35

        report = mem.maintain(Scope("t", "u0"))
        assert report.jobs_swept == 30
        assert report.as_dict()["jobs_swept"] == 30
        assert _ids(store, "done") == {f"young-{i}" for i in range(5)}
        assert _ids(store, "failed") == {f"failed-{i}" for i in range(4)}
        assert _ids(store, "pending") == {"pending"}
        assert _ids(store, "running") == {"running"}
        store.finish_job("running", running.lease_token)  # its claim still holds it
        assert store.stats(Scope("t", "u0")).failed_jobs == 4
        # the age counts from when a job was due (the stores keep no finish time): one
        # that waited 120 days to finish goes at the next pass
        assert mem.maintain(Scope("t", "u1")).jobs_swept == 1
        assert mem.maintain(Scope("t", "u1")).jobs_swept == 0
        # nine days on, the young ones go too
        later = mem.maintain(Scope("t", "u1"), now=NOW + timedelta(days=9))
        assert later.jobs_swept == 5
        assert _ids(store, "done") == set() and len(_ids(store, "failed")) == 4


def test_a_pass_sweeps_five_batches_at_most_then_the_next_goes_on(url: str) -> None:
    n = 5 * DONE_SWEEP_BATCH + 700
    with Memory(url, embedder="hashing", clock=FixedClock(NOW), background=False) as mem:
        store = _durable(mem)
        done = [
            job(f"d{i:05d}", f"u{i % 2}", OLD + timedelta(seconds=i), JobStatus.DONE)
            for i in range(n)
        ]
        for i in range(0, n, 500):
            store.enqueue(done[i : i + 500])
        assert mem.maintain(Scope("t", "u0")).jobs_swept == 5 * DONE_SWEEP_BATCH
        left = _ids(store, "done")
        assert left == {j.id for j in done[5 * DONE_SWEEP_BATCH :]}  # the oldest went first
        assert mem.maintain(Scope("t", "u0")).jobs_swept == 700
        assert mem.maintain(Scope("t", "u0")).jobs_swept == 0


def test_retention_days_are_checked() -> None:
    for bad in (0, -1.0, float("nan"), "7", True):
        with pytest.raises(ValidationError, match="done_jobs_days"):
            Retention(done_jobs_days=bad)  # type: ignore[arg-type]
    assert Retention().done_jobs_days == Retention.seed_002().done_jobs_days == 7.0


def test_cli_and_http_report_the_jobs_swept(tmp_path: Path) -> None:
    from memstrata.cli.app import app

    db = f"sqlite:///{tmp_path / 'c.db'}"
    base = ["--db", db, "--tenant", "t", "--user", "alice", "--embedder", "hashing"]
    with Memory(db, embedder="hashing", background=False) as mem:
        now = datetime.now(UTC)
        store = _durable(mem)
        store.enqueue(
            [job(f"d{i}", "alice", now - timedelta(days=8 + i), JobStatus.DONE) for i in range(3)]
        )
    result = CliRunner().invoke(app, [*base, "maintain", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["jobs_swept"] == 3
    table = CliRunner().invoke(app, [*base, "maintain"])
    assert table.exit_code == 0 and "jobs swept" in table.output
    assert MaintenanceOut.model_json_schema()["properties"]["jobs_swept"]["type"] == "integer"


def test_async_memory_sweeps_too(tmp_path: Path) -> None:
    """``AsyncMemory``'s pass reaches the sweep through its threaded SQLite store and
    memory:// alike (``maintain`` finds ``sweep_done_jobs`` on whatever store it has)."""
    import asyncio

    from memstrata.aio import AsyncMemory

    async def swept(url: str) -> int:
        clock = FixedClock(NOW)
        async with AsyncMemory(url, embedder="hashing", clock=clock, background=False) as mem:
            store = getattr(mem.store, "durable", mem.store)
            await store.enqueue([job(f"d{i}", "u0", OLD, JobStatus.DONE) for i in range(3)])
            return (await mem.maintain(Scope("t", "u0"))).jobs_swept

    assert asyncio.run(swept(f"sqlite:///{tmp_path / 'a.db'}")) == 3
    assert asyncio.run(swept("memory://")) == 3


def test_maintain_sweeps_the_store_under_a_redis_buffer(
    tmp_path: Path, redis_buffer_url: str
) -> None:
    """The Redis hot state forwards the sweep to the durable store it sits in front of."""
    url = f"sqlite:///{tmp_path / 'r.db'}"
    clock = FixedClock(NOW)
    with Memory(
        url, embedder="hashing", clock=clock, background=False, buffer=redis_buffer_url
    ) as mem:
        store = _durable(mem)
        store.enqueue([job(f"d{i}", "u0", OLD, JobStatus.DONE) for i in range(3)])
        assert mem.maintain(Scope("t", "u0")).jobs_swept == 3
        assert store.list_jobs("t", "u0") == []


def test_a_retention_longer_than_the_calendar_keeps_every_done_job() -> None:
    """``done_jobs_days=1e9`` (a way to say "for ever") sweeps nothing; before its fix the
    pass raised ``OverflowError`` working out the cut."""
    with Memory("memory://", embedder="hashing", clock=FixedClock(NOW), background=False) as mem:
        store = _durable(mem)
        store.enqueue([job("d", "u0", OLD, JobStatus.DONE)])
        report = mem.maintain(Scope("t", "u0"), retention=Retention(done_jobs_days=1e9))
        assert report.jobs_swept == 0 and len(store.list_jobs("t", "u0")) == 1
