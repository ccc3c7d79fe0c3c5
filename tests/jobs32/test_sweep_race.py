"""The sweep of done jobs racing workers on real SQLite and PostgreSQL (jobs32): four
worker threads claim, finish or give up on 400 jobs due 30 days ago (so every one of them
is past the retention the moment it is done) while a fifth sweeps in small batches, each
on its own connection. No pending or running job is ever deleted (a worker finishing its
claim would get ``NotFoundError``), no failed job is, and every done job is swept in the
end."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memstrata.jobs import Job
from memstrata.store import open_store

NOW = datetime.now(UTC)
OLD = NOW - timedelta(days=30)
JOBS = 400
USERS = 20


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "postgresql":
        yield request.getfixturevalue("pg_url")
    else:
        yield f"sqlite:///{tmp_path / 'm.db'}"


def _job(i: int) -> Job:
    at = OLD + timedelta(seconds=i)
    return Job(
        id=f"j{i:04d}",
        kind="k",
        tenant="t",
        user=f"u{i % USERS}",
        payload={},
        created_at=at,
        run_after=at,
    )


def test_sweeps_racing_claims_and_finishes_delete_only_done_jobs(url: str) -> None:
    setup = open_store(url)
    try:
        setup.enqueue([_job(i) for i in range(JOBS)])
    finally:
        setup.close()
    errors: list[BaseException] = []
    finished: list[str] = []
    failed: list[str] = []
    swept = [0]
    working = threading.Event()
    working.set()
    lock = threading.Lock()

    def worker() -> None:
        store = open_store(url)
        try:
            while True:
                claimed = store.claim_jobs(NOW, limit=3, lease_seconds=600)
                if not claimed:
                    if store.count_open_jobs() == 0:
                        return
                    continue
                for j in claimed:
                    if int(j.id[1:]) % 5 == 0:
                        store.fail_job(j.id, "boom", None, j.lease_token)
                        with lock:
                            failed.append(j.id)
                    else:
                        store.finish_job(j.id, j.lease_token)  # NotFoundError if swept
                        with lock:
                            finished.append(j.id)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            store.close()

    def sweeper() -> None:
        store: Any = open_store(url)
        try:
            while working.is_set():
                swept[0] += store.sweep_done_jobs(NOW - timedelta(days=7), 7)
            while n := store.sweep_done_jobs(NOW - timedelta(days=7), 7):
                swept[0] += n
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            store.close()

    workers = [threading.Thread(target=worker) for _ in range(4)]
    sweeping = threading.Thread(target=sweeper)
    sweeping.start()
    for t in workers:
        t.start()
    for t in workers:
        t.join(300)
    working.clear()
    sweeping.join(300)
    assert errors == []
    assert len(finished) + len(failed) == JOBS and len(set(finished)) == len(finished)
    assert swept[0] == len(finished) == JOBS - JOBS // 5
    store = open_store(url)
    try:
        left: dict[str, Any] = {}
        for u in range(USERS):
            for j in store.list_jobs("t", f"u{u}"):
                left[j.id] = j.status.value
        assert left == {i: "failed" for i in failed}
    finally:
        store.close()
