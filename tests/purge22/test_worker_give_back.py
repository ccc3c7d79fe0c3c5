"""A job the worker claimed but did not run (its stop came first, or its run was
cancelled) is given back without using up an attempt.

Before session 22 the give-back kept the attempt its claim had counted: a job given back at
several shutdowns and then failing once was failed for good, never retried (here: given
back 3 times, ``max_attempts=2``, its first failure ended it)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstrata._async.worker import AsyncJobRunner
from memstrata.aio.threaded import threaded
from memstrata.clock import SystemClock
from memstrata.jobs import Job, JobStatus
from memstrata.store import Store, open_store
from memstrata.worker import JobRunner
from store.conftest import make_store

KINDS = ("sqlite-file", "memory", "postgresql")


@pytest.fixture(params=KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s = make_store(request.param, tmp_path)
    yield s
    s.close()


def _job() -> Job:
    now = datetime.now(UTC)
    return Job(
        id="j1", kind="flaky", tenant="t", user="u", payload={}, created_at=now, run_after=now
    )


class _StopAfterClaim:
    """A worker's stop that comes between its claim and its first job."""

    def __init__(self) -> None:
        self.asked = 0

    def __call__(self) -> bool:
        self.asked += 1
        return self.asked > 1  # not before the claim, then at once


def test_jobs_given_back_at_shutdowns_keep_their_attempts(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="memstrata.worker")
    store.enqueue([_job()])
    failures: list[str] = []

    def flaky(job: Job) -> None:
        if not failures:
            failures.append(job.id)
            raise RuntimeError("the provider hiccupped once")

    runner = JobRunner(store, {"flaky": flaky}, SystemClock(), max_attempts=2)
    try:
        for _ in range(3):  # three shutdowns, each right after the claim
            report = runner.run_pending(stopping=_StopAfterClaim())
            assert (report.done, report.failed) == (0, 0)
            (job,) = store.list_jobs("t", "u")
            assert (job.status, job.attempts) == (JobStatus.PENDING, 0)
        report = runner.run_pending(include_delayed=True)  # fails once, then runs again
        assert (report.retried, report.failed, report.done) == (1, 0, 1), report.errors
    finally:
        runner.close()
    (job,) = store.list_jobs("t", "u")
    assert (job.status, job.attempts) == (JobStatus.DONE, 2)


def test_a_cancelled_async_run_gives_its_claim_back_without_an_attempt(tmp_path: Path) -> None:
    sync = open_store(f"sqlite:///{tmp_path / 'c.db'}")
    sync.enqueue([_job()])
    started = asyncio.Event()

    async def slow(job: Job) -> None:
        started.set()
        await asyncio.sleep(30)

    async def main() -> None:
        runner = AsyncJobRunner(threaded(sync), {"flaky": slow}, SystemClock())
        run = asyncio.create_task(runner.run_pending())
        await asyncio.wait_for(started.wait(), 10)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        await runner.aclose()

    asyncio.run(main())
    (job,) = sync.list_jobs("t", "u")
    sync.close()
    assert (job.status, job.attempts) == (JobStatus.PENDING, 0)
