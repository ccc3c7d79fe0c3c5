"""The retry line of a worker loop names the job the store failed under (session 31).

cli30 made a retryable store failure one line ("background job run failed: <error>; will
retry ..."), which said nothing of which job or user: an operator could not tell a job
that fails every time from an outage. Now the background loop's line (and ``memstrata
worker``'s) says "while claiming jobs", or "in job <id> (<kind>) of user <hash>": the
job's id and kind and ``subject_hash(tenant, user)`` (the hash of the user's quota keys),
never the ids or words a caller gave."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from pathlib import Path

import pytest

from memstrata import AsyncMemory, Memory, Scope
from memstrata.clock import SystemClock
from memstrata.jobs import Job
from memstrata.quotas import subject_hash
from memstrata.worker import BackgroundWorker, JobRunner

ME = Scope("acme-corp", "alice.private@example.com", session="s1")


@pytest.fixture
def quick_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    # the store waits 0.1 s for a lock instead of its default (seconds): the test's pace
    monkeypatch.setattr("memstrata.store.sqlite.store._BUSY_TIMEOUT_S", 0.1)
    monkeypatch.setattr("memstrata.store.sqlite.failures.BUSY_TIMEOUT_S", 0.1)


class LockAfter:
    """A job handler that takes another connection's write lock on the store as it ends:
    the runner's next write (recording the job done) meets a locked file, retryable."""

    def __init__(self, path: Path) -> None:
        self.other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.ran: list[Job] = []

    def __call__(self, job: Job) -> None:
        self.ran.append(job)
        if not self.other.in_transaction:
            self.other.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        if self.other.in_transaction:
            self.other.execute("ROLLBACK")
        self.other.close()


def _lines(caplog: pytest.LogCaptureFixture, start: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "memstrata.worker" and r.getMessage().startswith(start)
    ]


def _check_names_the_job(line: str, job: Job, then: str) -> None:
    assert f"in job {job.id} ({job.kind}) of user {subject_hash(ME.tenant, ME.user)}{then}" in line
    assert "locked" in line  # the error's own message
    assert "alice" not in line and "acme" not in line and "Lisbon" not in line  # no user words


def test_the_background_loop_names_the_job(
    tmp_path: Path, quick_busy: None, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "m.db"
    with Memory(f"sqlite:///{path}", embedder="hashing", background=False) as mem:
        mem.add_message(ME, "user", "I moved to Lisbon in May")
        handler = LockAfter(path)
        kinds = {job.kind for job in mem.store.list_jobs(ME.tenant, ME.user)}
        runner = JobRunner(mem.store, dict.fromkeys(kinds, handler), SystemClock())
        caplog.set_level(logging.WARNING, logger="memstrata.worker")
        try:
            worker = BackgroundWorker(runner, poll_seconds=0.05)
            deadline = time.monotonic() + 10
            while not _lines(caplog, "background job run failed") and time.monotonic() < deadline:
                time.sleep(0.05)
            worker.stop()
        finally:
            handler.release()
        runner.close()
    (line, *_) = _lines(caplog, "background job run failed")
    assert handler.ran
    _check_names_the_job(line, handler.ran[0], ": ")
    assert line.startswith(f"background job run failed in job {handler.ran[0].id} ")


def test_memstrata_worker_names_the_job(
    tmp_path: Path, quick_busy: None, caplog: pytest.LogCaptureFixture
) -> None:
    """``memstrata worker``'s loop (``run_forever``), on the async tree the threads' one is
    generated from."""
    from memstrata._async.worker import AsyncJobRunner

    path = tmp_path / "m.db"
    handler = LockAfter(path)

    async def async_handler(job: Job) -> None:
        handler(job)

    async def main() -> None:
        mem = AsyncMemory(f"sqlite:///{path}", embedder="hashing", background=False)
        try:
            await mem.add_message(ME, "user", "I moved to Lisbon in May")
            kinds = {job.kind for job in await mem.store.list_jobs(ME.tenant, ME.user)}
            runner = AsyncJobRunner(mem.store, dict.fromkeys(kinds, async_handler), SystemClock())
            deadline = time.monotonic() + 10

            def stop() -> bool:
                return bool(_lines(caplog, "the store did not answer")) or (
                    time.monotonic() > deadline
                )

            await runner.run_forever(poll_seconds=0.05, stop=stop)
            await runner.aclose()
        finally:
            handler.release()
            await mem.aclose()

    caplog.set_level(logging.WARNING, logger="memstrata.worker")
    asyncio.run(main())
    (line, *_) = _lines(caplog, "the store did not answer")
    assert handler.ran
    _check_names_the_job(line, handler.ran[0], " (")
