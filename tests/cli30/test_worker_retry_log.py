"""The background worker's log of store failures it will retry: one line, not a traceback.

A SQLite file locked by another process past the busy timeout is a retryable
``StoreError``; the in-process worker (``BackgroundWorker``) and the lease heartbeat retry
it. Before session 30 each logged a full traceback per attempt (``log.exception`` /
``exc_info=True``), so a worker riding out a lock or a PostgreSQL restart filled its log
with the same stack; now the line names what failed, the error's message and when it
retries, and the traceback is at DEBUG only. A failure that is not retryable keeps it.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from memstrata import Memory, Scope
from memstrata.clock import SystemClock
from memstrata.worker import BackgroundWorker, Heartbeat, JobRunner, _Claim

ME = Scope("t", "u", session="s1")


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Another process's write lock on the store (a second connection in this one)."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


@pytest.fixture
def quick_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    # the store waits 0.1 s for a lock instead of its default (seconds): the test's pace
    monkeypatch.setattr("memstrata.store.sqlite.store._BUSY_TIMEOUT_S", 0.1)
    monkeypatch.setattr("memstrata.store.sqlite.failures.BUSY_TIMEOUT_S", 0.1)


def _worker_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "memstrata.worker"]


def test_a_locked_store_is_one_line_per_background_run(
    tmp_path: Path, quick_busy: None, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "m.db"
    with Memory(f"sqlite:///{path}", embedder="hashing", background=False) as mem:
        mem.add_message(ME, "user", "I moved to Lisbon in May")
        runner = JobRunner(mem.store, {}, SystemClock())
        caplog.set_level(logging.WARNING, logger="memstrata.worker")
        with _locked(path):
            worker = BackgroundWorker(runner, poll_seconds=0.05)
            deadline = time.monotonic() + 10
            while not _worker_records(caplog) and time.monotonic() < deadline:
                time.sleep(0.05)
            worker.stop()
        runner.close()
    records = _worker_records(caplog)
    assert records, "the worker logged nothing while the store was locked"
    first = records[0]
    assert first.levelno == logging.WARNING
    assert first.exc_info is None, "a retryable store error logged its traceback"
    line = first.getMessage()
    assert line.startswith("background job run failed while claiming jobs: ")
    assert "locked" in line  # the error's own message, with what to do
    assert "will retry at the next write or within 0.05 s" in line


def test_its_traceback_is_at_debug(
    tmp_path: Path, quick_busy: None, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "m.db"
    with Memory(f"sqlite:///{path}", embedder="hashing", background=False) as mem:
        mem.add_message(ME, "user", "I moved to Lisbon in May")
        runner = JobRunner(mem.store, {}, SystemClock())
        caplog.set_level(logging.DEBUG, logger="memstrata.worker")
        with _locked(path):
            worker = BackgroundWorker(runner, poll_seconds=0.05)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not any(
                r.exc_info for r in _worker_records(caplog)
            ):
                time.sleep(0.05)
            worker.stop()
        runner.close()
    traced = [r for r in _worker_records(caplog) if r.exc_info]
    assert traced and all(r.levelno == logging.DEBUG for r in traced)


def test_the_heartbeat_says_one_line_too(
    tmp_path: Path, quick_busy: None, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "m.db"
    with Memory(f"sqlite:///{path}", embedder="hashing", background=False) as mem:
        mem.add_message(ME, "user", "I moved to Lisbon in May")
        clock = SystemClock()
        jobs = mem.store.claim_jobs(clock.now(), limit=5, lease_seconds=30)
        assert jobs
        beat = Heartbeat(mem.store, clock, 30)
        caplog.set_level(logging.WARNING, logger="memstrata.worker")
        with _locked(path):
            beat.renew(_Claim(jobs))
    (record,) = _worker_records(caplog)
    assert record.exc_info is None
    line = record.getMessage()
    assert line.startswith(f"could not renew job leases (claim {jobs[0].lease_token}): ")
    assert "locked" in line and line.endswith("retrying in 10.0 s")


def test_an_unexpected_failure_keeps_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(Exception):
        pass

    class BrokenRunner:  # a bug in the run: not a store error at all
        def run_pending(self, **_: object) -> None:
            raise Broken("a bug")

    caplog.set_level(logging.WARNING, logger="memstrata.worker")
    worker = BackgroundWorker(BrokenRunner(), poll_seconds=0.05)  # type: ignore[arg-type]
    deadline = time.monotonic() + 10
    while not _worker_records(caplog) and time.monotonic() < deadline:
        time.sleep(0.05)
    worker.stop()
    record = _worker_records(caplog)[0]
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None and record.exc_info[0] is Broken


def test_the_async_heartbeat_too(
    tmp_path: Path, quick_busy: None, caplog: pytest.LogCaptureFixture
) -> None:
    """The same source, generated into the thread worker above (scripts/unasync.py)."""
    import asyncio

    from memstrata import AsyncMemory
    from memstrata._async.worker import AsyncHeartbeat
    from memstrata._async.worker import _Claim as _AsyncClaim

    path = tmp_path / "m.db"

    async def main() -> str:
        mem = AsyncMemory(f"sqlite:///{path}", embedder="hashing", background=False)
        try:
            await mem.add_message(ME, "user", "I moved to Lisbon in May")
            clock = SystemClock()
            jobs = await mem.store.claim_jobs(clock.now(), limit=5, lease_seconds=30)
            assert jobs
            beat = AsyncHeartbeat(mem.store, clock, 30)
            caplog.set_level(logging.WARNING, logger="memstrata.worker")
            with _locked(path):
                await beat.renew(_AsyncClaim(jobs))
            return jobs[0].lease_token or ""
        finally:
            await mem.aclose()

    token = asyncio.run(main())
    (record,) = _worker_records(caplog)
    assert record.exc_info is None
    assert record.getMessage().startswith(f"could not renew job leases (claim {token}): ")
