"""The crash/retry of a background job: in-process failures are retried with backoff and
kept as ``failed`` after the last attempt; a process killed with SIGKILL mid-job loses no
message, and the job runs again once its lease has expired."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.filters import Filters
from memstrata.jobs import Job, retry_delay
from memstrata.records import Message, RecordType, Role, new_id
from memstrata.store import open_store
from memstrata.worker import JobRunner

T0 = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
SCOPE = Scope("acme", "carol", session="c1")
SRC = str(Path(__file__).resolve().parents[2] / "src")


def _job(kind: str = "probe") -> Job:
    return Job(
        id=new_id(),
        kind=kind,
        tenant="acme",
        user="carol",
        payload={"n": 1},
        created_at=T0,
        run_after=T0,
        session="c1",
    )


# --- (a) in process ---------------------------------------------------------------------------
class Flaky:
    """A real handler failing its first ``failures`` calls."""

    def __init__(self, failures: int, clock: FixedClock) -> None:
        self.failures = failures
        self.clock = clock
        self.calls: list[datetime] = []  # when each call happened

    def __call__(self, job: Job) -> None:
        self.calls.append(self.clock.now())
        if len(self.calls) <= self.failures:
            raise ConnectionError(f"LLM unreachable (call {len(self.calls)})")


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_a_failing_job_is_retried_with_backoff_then_succeeds(tmp_path: Path, kind: str) -> None:
    url = f"sqlite:///{tmp_path / 'j.db'}" if kind == "sqlite" else "memory://"
    store = open_store(url)
    clock = FixedClock(T0)
    try:
        flaky = Flaky(2, clock)
        runner = JobRunner(store, {"probe": flaky}, clock)
        job = _job()
        store.enqueue([job])

        first = runner.run_pending()
        assert (first.done, first.retried, first.failed) == (0, 1, 0)
        assert "LLM unreachable" in first.errors[0]
        (pending,) = store.list_jobs("acme", "carol", status="pending")
        assert pending.attempts == 1 and "ConnectionError" in (pending.last_error or "")
        assert pending.run_after == T0 + retry_delay(1) == T0 + timedelta(seconds=2)

        # not due yet: nothing runs
        assert runner.run_pending().retried == 0 and len(flaky.calls) == 1
        clock.advance(seconds=2)
        second = runner.run_pending()
        assert second.retried == 1 and len(flaky.calls) == 2
        (pending,) = store.list_jobs("acme", "carol", status="pending")
        assert pending.attempts == 2
        assert pending.run_after == clock.now() + timedelta(seconds=4)  # doubled

        clock.advance(seconds=3)
        assert runner.run_pending().retried == 0  # still backing off
        clock.advance(seconds=1)
        third = runner.run_pending()
        assert (third.done, third.retried, third.failed) == (1, 0, 0)
        assert flaky.calls == [T0, T0 + timedelta(seconds=2), T0 + timedelta(seconds=6)]
        (done,) = store.list_jobs("acme", "carol", status="done")
        assert done.id == job.id and done.attempts == 3
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_after_max_attempts_the_job_is_failed_and_kept(tmp_path: Path, kind: str) -> None:
    url = f"sqlite:///{tmp_path / 'j.db'}" if kind == "sqlite" else "memory://"
    store = open_store(url)
    clock = FixedClock(T0)
    try:
        flaky = Flaky(100, clock)
        runner = JobRunner(store, {"probe": flaky}, clock, max_attempts=4)
        store.enqueue([_job()])
        report = runner.run_pending(include_delayed=True)  # flush(): retries run at once
        assert len(flaky.calls) == 4, "max_attempts=4 must mean four runs"
        assert (report.done, report.retried, report.failed) == (0, 3, 1)
        (failed,) = store.list_jobs("acme", "carol", status="failed")
        assert failed.attempts == 4 and "call 4" in (failed.last_error or "")
        assert failed.lease_until is None
        # kept for inspection, and never picked up again
        assert runner.run_pending(include_delayed=True).failed == 0 and len(flaky.calls) == 4
        assert store.list_jobs("acme", "carol", status="pending") == []
    finally:
        store.close()


def test_an_unknown_job_kind_fails_at_once_and_is_kept(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'j.db'}")
    try:
        store.enqueue([_job("nobody-handles-this")])
        report = JobRunner(store, {}, FixedClock(T0)).run_pending()
        assert report.failed == 1
        (failed,) = store.list_jobs("acme", "carol", status="failed")
        assert "no handler" in (failed.last_error or "")
    finally:
        store.close()


def test_a_failing_ingest_job_through_memory_keeps_messages_and_recovers(tmp_path: Path) -> None:
    """A layer step that breaks inside Memory's own pipeline: the job is retried, the
    messages are never lost, and the healthy steps' work is not duplicated."""
    clock = FixedClock(T0)
    mem = Memory(
        f"sqlite:///{tmp_path / 'm.db'}",
        embedder="hashing",
        llm="heuristic",
        clock=clock,
        background=False,
    )
    try:
        steps = mem.layers.pipeline.steps
        facts_step = next(s for s in steps if s.name == "facts")
        original = facts_step.on_messages
        broken = {"left": 1}

        def sometimes_broken(scope, messages):  # type: ignore[no-untyped-def]
            if broken["left"]:
                broken["left"] -= 1
                raise RuntimeError("fact store offline")
            original(scope, messages)

        facts_step.on_messages = sometimes_broken  # type: ignore[method-assign]
        recs = mem.add_messages(SCOPE, _conversation())
        report = mem.flush(SCOPE)  # flush() also runs the retry at once
        assert (report.done, report.retried, report.failed) == (1, 1, 0)
        assert "fact store offline" in report.errors[0] and len(report.errors) == 1
        assert mem.facts.get(SCOPE, "allergy") is not None
        assert len(mem.layers.summaries.summaries(SCOPE)) == 1
        stored = mem.list(
            SCOPE,
            filters=Filters(types=frozenset({RecordType.MESSAGE})),
            limit=100,
            newest_first=False,
        )
        assert [r.id for r in stored] == [r.id for r in recs]
    finally:
        mem.close()


def _conversation() -> list[Message]:
    turns = [
        ("user", "I am allergic to penicillin and I live in Oslo."),
        ("assistant", "Noted, I will remember the penicillin allergy."),
    ]
    for i in range(10):
        turns += [
            (
                "user",
                f"Question {i}: how should I prepare for the ski trip to "
                f"{['Geilo', 'Hemsedal'][i % 2]}?",
            ),
            ("assistant", f"Answer {i}: wax the skis and check the avalanche forecast."),
        ]
    return [
        Message(role=Role(r), content=c, observed_at=T0 + timedelta(minutes=i))
        for i, (r, c) in enumerate(turns)
    ]


# --- (b) a real kill -9 -----------------------------------------------------------------------
CHILD = textwrap.dedent("""
    import json, os, signal, sys
    from datetime import datetime, timedelta
    from memstrata import FixedClock, Memory, Scope
    from memstrata.worker import JobRunner

    url, t0, lease, payload = sys.argv[1], datetime.fromisoformat(sys.argv[2]), \\
        float(sys.argv[3]), json.loads(sys.argv[4])
    clock = FixedClock(t0)
    mem = Memory(url, embedder="hashing", llm="heuristic", clock=clock, background=False)
    scope = Scope("acme", "carol", session="c1")
    for m in payload:
        m["observed_at"] = datetime.fromisoformat(m["observed_at"])
    records = mem.add_messages(scope, payload)
    print(json.dumps([r.id for r in records]), flush=True)

    summary_step = next(s for s in mem.layers.pipeline.steps if s.name == "summaries")

    def die_mid_job(job):
        msgs = mem.store.get_many(scope, job.payload["ids"])
        summary_step.on_messages(scope, msgs)          # the first step's work is committed
        print("FIRST-STEP-DONE", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)            # ... and the process dies mid-job

    JobRunner(mem.store, {"ingest": die_mid_job}, clock, lease_seconds=lease).run_pending()
    print("UNREACHABLE", flush=True)
""")


def test_kill_9_mid_job_loses_nothing_and_the_job_runs_after_its_lease(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    url = f"sqlite:///{path}"
    lease = 120.0
    payload = [
        {
            "role": m.role.value,
            "content": m.content,
            "observed_at": m.observed_at.isoformat() if m.observed_at else None,
        }
        for m in _conversation()
    ]
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, url, T0.isoformat(), str(lease), json.dumps(payload)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, err)
    lines = out.splitlines()
    assert lines[1:] == ["FIRST-STEP-DONE"], (out, err)
    ids = json.loads(lines[0])
    assert len(ids) == len(payload)

    clock = FixedClock(T0 + timedelta(seconds=1))
    mem = Memory(url, embedder="hashing", llm="heuristic", clock=clock, background=False)
    try:
        # every message is intact, with its text and date
        stored = mem.list(
            SCOPE,
            filters=Filters(types=frozenset({RecordType.MESSAGE})),
            limit=100,
            newest_first=False,
        )
        assert [r.id for r in stored] == ids
        assert [r.text for r in stored] == [m["content"] for m in payload]
        assert [r.observed_at.isoformat() for r in stored] == [m["observed_at"] for m in payload]
        # the dead process's job: still running under its lease, the first step's output there
        (job,) = mem.store.list_jobs("acme", "carol", status="running")
        assert job.kind == "ingest" and job.attempts == 1 and list(job.payload["ids"]) == ids
        assert job.lease_until == T0 + timedelta(seconds=lease)
        assert len(mem.layers.summaries.summaries(SCOPE)) == 1
        assert mem.facts.get(SCOPE, "allergy") is None
        assert mem.layers.mid_term.clusters(SCOPE) == []

        # while the lease holds, nobody else may take the job (the owner could be alive)
        early = mem.flush(SCOPE, timeout=0.3)  # flush waits for it, up to the timeout
        assert (early.done, early.retried, early.failed, early.waiting) == (0, 0, 0, 1)
        assert mem.store.list_jobs("acme", "carol", status="running")[0].id == job.id

        clock.advance(seconds=lease)
        report = mem.flush(SCOPE)
        assert (report.done, report.retried, report.failed) == (1, 0, 0), report.errors
        (done,) = mem.store.list_jobs("acme", "carol", status="done")
        assert done.id == job.id and done.attempts == 2
        # the job ran to completion: facts and clusters appeared, no summary twice
        fact = mem.facts.get(SCOPE, "allergy")
        assert fact is not None and fact.content.structured["value"] == "penicillin"
        assert mem.facts.get(SCOPE, "location") is not None
        assert len(mem.layers.summaries.summaries(SCOPE)) == 1
        mem.end_session(SCOPE)
        assert mem.layers.mid_term.clusters(SCOPE)
        assert mem.episodes.conversation_episode(SCOPE) is not None
        assert mem.stats(SCOPE)["pending_jobs"] == 0
        ctx = mem.build_context(SCOPE, "what am I allergic to?", 2000)
        assert "penicillin" in ctx.text
    finally:
        mem.close()
