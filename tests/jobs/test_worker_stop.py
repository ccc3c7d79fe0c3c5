"""The background worker's ``stop()`` lets the current job finish and leaves the rest queued.

Before session 21 (ops21 found it on ``memstrata serve``'s SIGTERM): ``run_pending`` claimed
batch after batch without asking whether the worker was stopping, so ``stop()`` waited
until the queue was empty or its timeout (30 s) ran out, and the claim being run when it
gave up stayed "running" under a lease nobody renewed (the next start waited for it)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstrata.clock import SystemClock
from memstrata.jobs import Job, JobStatus
from memstrata.records import new_id
from memstrata.store import Store, open_store
from memstrata.worker import BackgroundWorker, JobRunner

JOBS = 200
STEP_S = 0.02  # each job; all of them take 4 s


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s = open_store(f"sqlite:///{tmp_path / 'r.db'}" if request.param == "sqlite" else "memory://")
    yield s
    s.close()


def test_stop_ends_after_the_current_job_and_gives_the_claim_back(store: Store) -> None:
    now = datetime.now(UTC)
    store.enqueue(
        [
            Job(
                id=new_id(),
                kind="probe",
                tenant="t",
                user="u",
                payload={},
                created_at=now,
                run_after=now,
            )
            for _ in range(JOBS)
        ]
    )
    done: list[str] = []
    three = threading.Event()

    def handler(job: Job) -> None:
        time.sleep(STEP_S)
        done.append(job.id)
        if len(done) >= 3:
            three.set()

    worker = BackgroundWorker(
        JobRunner(store, {"probe": handler}, SystemClock()), poll_seconds=0.05
    )
    worker.wake()
    assert three.wait(10)
    t0 = time.monotonic()
    worker.stop(timeout=30)
    stopped_in = time.monotonic() - t0
    jobs = [j for page in store.dump_jobs() for j in page]
    by_status = {s: sum(j.status is s for j in jobs) for s in JobStatus}
    assert by_status[JobStatus.RUNNING] == 0, "a claimed job was left leased to nobody"
    assert by_status[JobStatus.DONE] == len(done)
    assert by_status[JobStatus.PENDING] == JOBS - len(done) > JOBS // 2  # not run to the end
    assert stopped_in < 2.0, f"stop() took {stopped_in:.1f} s"
    assert all(j.lease_token is None for j in jobs if j.status is JobStatus.PENDING)
