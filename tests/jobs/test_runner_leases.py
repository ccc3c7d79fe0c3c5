"""The runner's side of leases: a heartbeat keeps a long job's lease, a worker that stalls
past its lease stops and cannot record a result, and ``flush()`` waits for jobs that
another worker (the background thread) holds instead of racing it on the same user."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstrata import Memory, Scope
from memstrata.clock import SystemClock
from memstrata.jobs import Job, check_lease
from memstrata.records import Message, Role, new_id
from memstrata.store import Store, open_store
from memstrata.worker import JobRunner


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s = open_store(f"sqlite:///{tmp_path / 'r.db'}" if request.param == "sqlite" else "memory://")
    yield s
    s.close()


def _job(user: str = "u1") -> Job:
    now = datetime.now(UTC)
    return Job(
        id=new_id(), kind="probe", tenant="t", user=user, payload={}, created_at=now, run_after=now
    )


def test_the_heartbeat_keeps_a_long_job_from_being_claimed_again(store: Store) -> None:
    lease = 0.4
    started, release = threading.Event(), threading.Event()
    runs: list[str] = []

    def slow(job: Job) -> None:
        runs.append(job.id)
        started.set()
        release.wait(10)

    runner = JobRunner(store, {"probe": slow}, SystemClock(), lease_seconds=lease)
    rival = JobRunner(store, {"probe": slow}, SystemClock(), lease_seconds=lease)
    job = _job()
    store.enqueue([job])
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(runner.run_pending()))
    thread.start()
    try:
        assert started.wait(10)
        deadline = time.monotonic() + 4 * lease  # four leases long
        while time.monotonic() < deadline:
            report = rival.run_pending()
            assert (report.done, report.lost) == (0, 0), "a held job was claimed twice"
            time.sleep(lease / 4)
        (held,) = store.list_jobs("t", "u1", status="running")
        assert held.lease_until is not None and held.lease_until > datetime.now(UTC)
    finally:
        release.set()
        thread.join(10)
        runner.close()
        rival.close()
    assert runs == [job.id]
    (done,) = store.list_jobs("t", "u1", status="done")
    assert done.attempts == 1
    assert out and out[0].done == 1  # type: ignore[attr-defined]


def test_a_stalled_worker_stops_and_its_result_is_refused(
    store: Store, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The first worker cannot renew (its store is 'unreachable'), stalls past its lease; a
    second worker takes the job over and finishes it. The first then neither runs the rest
    of the job nor records anything."""
    lease = 0.3
    second_steps: list[str] = []
    in_step_one, taken_over = threading.Event(), threading.Event()

    def two_steps(job: Job) -> None:
        second_steps.append("step1")
        if threading.current_thread().name == "stalling":
            in_step_one.set()
            taken_over.wait(10)  # stalls well past its lease
        check_lease()  # what Pipeline does between steps
        second_steps.append("step2")

    stalling = JobRunner(store, {"probe": two_steps}, SystemClock(), lease_seconds=lease)
    # This worker's renewals fail, as if its connection to the store hung.
    monkeypatch.setattr(stalling._heartbeat, "renew", lambda claim: None)
    rescuer = JobRunner(store, {"probe": two_steps}, SystemClock(), lease_seconds=lease)
    store.enqueue([_job()])
    reports: list[object] = []
    thread = threading.Thread(
        target=lambda: reports.append(stalling.run_pending()), name="stalling"
    )
    caplog.set_level(logging.WARNING, logger="memstrata.worker")
    thread.start()
    try:
        assert in_step_one.wait(10)
        time.sleep(lease * 1.5)
        rescued = rescuer.run_pending()
        assert (rescued.done, rescued.lost) == (1, 0)
        taken_over.set()
        thread.join(10)
    finally:
        taken_over.set()
        stalling.close()
        rescuer.close()
    (report,) = reports
    assert (report.done, report.lost, report.retried) == (0, 1, 0)  # type: ignore[attr-defined]
    assert second_steps == ["step1", "step1", "step2"]  # step 2 ran once, by the rescuer
    (done,) = store.list_jobs("t", "u1", status="done")
    assert done.attempts == 2
    assert any("another worker" in r.getMessage() for r in caplog.records)


def test_a_finish_after_a_takeover_is_refused_even_without_a_lease_check(store: Store) -> None:
    """A handler that never calls check_lease: fencing at finish still keeps the stale
    worker from marking the job done over the new holder."""
    lease = 0.3
    gate = threading.Event()
    calls: list[str] = []

    def handler(job: Job) -> None:
        calls.append(threading.current_thread().name)
        if threading.current_thread().name == "stale":
            gate.wait(10)

    stale = JobRunner(store, {"probe": handler}, SystemClock(), lease_seconds=lease)
    stale._heartbeat.renew = lambda claim: None  # type: ignore[method-assign]
    store.enqueue([_job()])
    reports: list[object] = []
    thread = threading.Thread(target=lambda: reports.append(stale.run_pending()), name="stale")
    thread.start()
    fresh = JobRunner(store, {"probe": lambda job: None}, SystemClock(), lease_seconds=60)
    try:
        time.sleep(lease * 1.5)
        (held,) = fresh._store.claim_jobs(datetime.now(UTC), limit=1, lease_seconds=60)
        gate.set()
        thread.join(10)
        (report,) = reports
        assert (report.done, report.lost) == (0, 1)  # type: ignore[attr-defined]
        (running,) = store.list_jobs("t", "u1", status="running")
        assert running.lease_token == held.lease_token  # the new holder still has it
        store.finish_job(held.id, lease_token=held.lease_token)
    finally:
        gate.set()
        stale.close()
        fresh.close()


def _turns(n: int) -> list[Message]:
    topics = [
        "hiking in Norway",
        "a sourdough recipe",
        "the quarterly budget",
        "my sister's wedding",
        "learning Rust",
        "the broken dishwasher",
    ]
    out = []
    for i in range(n):
        role = Role.USER if i % 2 == 0 else Role.ASSISTANT
        out.append(
            Message(
                role=role,
                content=f"Turn {i} about {topics[i % len(topics)]}: "
                f"detail number {i * 7 % 13} matters here.",
            )
        )
    return out


def test_flush_and_the_background_thread_never_fight(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 8 §1 / 13 §2: feeding a conversation turn by turn with the background worker on
    and a flush after each turn used to log hundreds of ConflictError retries. Now the
    background thread and flush() never hold one user's jobs at once: 0 retries."""
    caplog.set_level(logging.DEBUG, logger="memstrata.worker")
    mem = Memory(f"sqlite:///{tmp_path / 'bg.db'}", embedder="hashing", llm="heuristic")
    scope = Scope("acme", "dana", session="s1")
    try:
        retried = lost = done = 0
        for i, msg in enumerate(_turns(160)):
            mem.add_messages(scope, [msg])
            if i % 3 == 0:  # flush while the background thread works on the same user
                report = mem.flush(scope)
                retried, lost, done = (
                    retried + report.retried,
                    lost + report.lost,
                    done + report.done,
                )
        mem.end_session(scope)
        final = mem.flush()
        assert final.waiting == 0
        jobs = mem.store.list_jobs("acme", "dana")
        assert jobs and all(j.status.value == "done" for j in jobs)
        assert [j.attempts for j in jobs if j.attempts != 1] == [], "a job ran more than once"
        assert (retried, lost) == (0, 0)
        assert not [r for r in caplog.records if "will retry" in r.getMessage()]
        assert mem.layers.mid_term.clusters(scope)
    finally:
        mem.close()


def test_flush_returns_after_its_timeout_when_a_live_worker_holds_the_job(tmp_path: Path) -> None:
    mem = Memory(
        f"sqlite:///{tmp_path / 'w.db'}", embedder="hashing", llm="heuristic", background=False
    )
    other = open_store(f"sqlite:///{tmp_path / 'w.db'}")
    scope = Scope("acme", "eve", session="s1")
    try:
        mem.add_messages(scope, _turns(2))
        (held,) = other.claim_jobs(datetime.now(UTC), limit=5, lease_seconds=30)
        t0 = time.monotonic()
        report = mem.flush(scope, timeout=0.3)
        assert 0.3 <= time.monotonic() - t0 < 5
        assert (report.done, report.waiting) == (0, 1)
        other.finish_job(held.id, lease_token=held.lease_token)
        assert mem.flush(scope).waiting == 0
    finally:
        other.close()
        mem.close()
