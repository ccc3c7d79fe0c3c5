"""A run's report accounts for every job it claimed: each ends in exactly one of ``done``,
``retried``, ``failed``, ``lost``, ``revoked`` and ``given_back``, which add up to
``claimed``; a job a purge took back is ``revoked`` however the worker found out.

Before session 23 a job whose claim a purge took back was counted ``lost`` ("another
worker runs it", a warning) when the worker found out by its heartbeat (before the job
started, or before it wrote) or when finishing or failing it was refused; a failure
recorded against a taken-back claim also left an entry in ``errors``. Here the purge is
made while the job runs, outside the job's claim (as another process's purge is), by the
job's own handler or a thread beside it, on real stores."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstrata._async.worker import AsyncJobRunner
from memstrata.aio.threaded import threaded
from memstrata.clock import SystemClock
from memstrata.jobs import Job, JobStatus, unfenced
from memstrata.scope import Scope
from memstrata.store import Store
from memstrata.worker import JobRunner, RunReport
from store.conftest import Maker, make_store

SCOPE = Scope("t1", "u1")
OUTCOMES = ("done", "retried", "failed", "lost", "revoked", "given_back")


@pytest.fixture(params=["sqlite-file", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s = make_store(request.param, tmp_path)
    yield s
    s.close()


def _jobs(store: Store, n: int = 1) -> list[Job]:
    now = datetime.now(UTC)
    jobs = [
        Job(
            id=f"j{i}",
            kind="derive",
            tenant="t1",
            user="u1",
            payload={},
            created_at=now,
            run_after=now,
        )
        for i in range(n)
    ]
    store.enqueue(jobs)
    return jobs


def _counts(report: RunReport) -> dict[str, int]:
    return {k: getattr(report, k, 0) for k in OUTCOMES if getattr(report, k, 0)}


def _adds_up(report: RunReport) -> None:
    assert getattr(report, "claimed", None) == sum(getattr(report, k) for k in OUTCOMES), report


def _run(store: Store, handler: Callable[[Job], None], **kw: float) -> RunReport:
    runner = JobRunner(store, {"derive": handler}, SystemClock(), **kw)  # type: ignore[arg-type]
    try:
        return runner.run_pending()
    finally:
        runner.close()


def _source(store: Store) -> str:
    source = Maker().write(text="I live in Lisbon")
    store.insert([source])
    return source.record.id


@pytest.mark.parametrize("fails", [False, True], ids=["returns", "fails"])
def test_a_job_whose_claim_a_records_purge_took_back_is_revoked(
    store: Store, fails: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """The purge comes before the job wrote anything: finishing (or failing) it is refused
    while its lease stood, so a purge took it (not another worker). It runs again, once."""
    caplog.set_level("INFO", logger="memstrata.worker")
    source = _source(store)
    _jobs(store)
    runs: list[str] = []

    def derive(job: Job) -> None:
        runs.append(job.id)
        if len(runs) == 1:
            with unfenced():  # not this job's: another process's purge
                store.purge(SCOPE, [source])
            if fails:  # what it read is gone
                raise RuntimeError("the turn it read is gone")

    report = _run(store, derive)
    assert _counts(report) == {"revoked": 1, "done": 1}, report
    _adds_up(report)
    assert report.errors == []
    assert runs == ["j0", "j0"]
    (job,) = store.list_jobs("t1", "u1")
    assert (job.status, job.attempts) == (JobStatus.DONE, 1)
    assert "another worker" not in caplog.text
    assert "taken back by a purge" in caplog.text


@pytest.mark.parametrize("fails", [False, True], ids=["returns", "fails"])
def test_a_job_whose_user_was_purged_is_revoked(
    store: Store, fails: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="memstrata.worker")
    _jobs(store)

    def derive(job: Job) -> None:
        with unfenced():
            store.purge_user("t1", "u1")
        if fails:
            raise RuntimeError("the turns it read are gone")

    report = _run(store, derive)
    assert _counts(report) == {"revoked": 1}, report
    _adds_up(report)
    assert report.errors == []
    assert "another worker" not in caplog.text


@pytest.mark.parametrize("kind", ["sqlite-file", "memory", "postgresql"])
def test_jobs_the_heartbeat_saw_a_purge_take_are_revoked_before_they_start(
    kind: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Three jobs of the user in one claim; while the first runs, the user is purged on
    another thread and the claim's heartbeat (a 0.3 s lease) sees its jobs gone: the first
    stops, the other two never start, all three revoked."""
    caplog.set_level("INFO", logger="memstrata.worker")
    store = make_store(kind, tmp_path)
    try:
        _jobs(store, 3)
        runs: list[str] = []

        def derive(job: Job) -> None:
            runs.append(job.id)
            if len(runs) == 1:
                beside = threading.Thread(target=lambda: store.purge_user("t1", "u1"))
                beside.start()
                beside.join(10)
                time.sleep(1.0)  # the heartbeat renews every 0.1 s

        report = _run(store, derive, lease_seconds=0.3)
    finally:
        store.close()
    assert _counts(report) == {"revoked": 3}, report
    _adds_up(report)
    assert runs == ["j0"]
    assert "another worker" not in caplog.text
    assert "taken back by a purge before it started" in caplog.text


@pytest.mark.parametrize("kind", ["sqlite-file", "memory", "postgresql"])
def test_jobs_a_stopping_worker_did_not_run_are_given_back(kind: str, tmp_path: Path) -> None:
    store = make_store(kind, tmp_path)
    try:
        _jobs(store, 3)
        asked: list[int] = []

        def stopping() -> bool:  # stop after the first job of the claim
            asked.append(1)
            return len(asked) > 2

        runner = JobRunner(store, {"derive": lambda job: None}, SystemClock())
        try:
            report = runner.run_pending(stopping=stopping)
        finally:
            runner.close()
        jobs = store.list_jobs("t1", "u1")
    finally:
        store.close()
    assert _counts(report) == {"done": 1, "given_back": 2}, report
    _adds_up(report)
    assert sorted(j.status.value for j in jobs) == ["done", "pending", "pending"]


def test_async_a_job_whose_claim_a_purge_took_back_is_revoked(tmp_path: Path) -> None:
    """The async twin on SQLite (the store's calls on its threads)."""
    sync = make_store("sqlite-file", tmp_path)
    source = _source(sync)
    _jobs(sync, 2)
    runs: list[str] = []

    async def derive(job: Job) -> None:
        runs.append(job.id)
        if len(runs) == 1:
            with unfenced():
                await asyncio.to_thread(sync.purge, SCOPE, [source])

    async def main() -> RunReport:
        runner = AsyncJobRunner(threaded(sync), {"derive": derive}, SystemClock())
        try:
            return await runner.run_pending()
        finally:
            await runner.aclose()

    try:
        report = asyncio.run(main())
    finally:
        sync.close()
    # both claims taken back: the first refused at its finish, the second found so at its
    # finish too (no heartbeat in 15 s); both run again
    assert _counts(report) == {"revoked": 2, "done": 2}, report
    _adds_up(report)
