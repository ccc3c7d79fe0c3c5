"""memory://'s claims by tenant alone or by session alone, and its sweep of done jobs
(store/memory_jobs.py; jobs32). Until jobs32 a claim by session alone walked every pending
job due before the first one of that session, and one by tenant alone every user's first
pending job before that tenant's first: both grew with the other tenants' and sessions'
queue, and so did a count of open jobs (what a flush waits on) by either: every open job
(``test_claims_and_counts_walk_the_same_at_100_and_10000_pending_jobs_of_others`` fails
there).
The state machine of memjobs31 (the indexed queue against one walk of every job) runs
again with sweeps of done jobs among its steps, compared with a sort of the done jobs."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import rule, run_state_machine_as_test

from memjobs31.test_job_index import Queue
from memstrata.jobs import Job, JobStatus
from memstrata.store.memory import InMemoryStore

FILTERS: list[dict[str, Any]] = [{"session": "s"}, {"tenant": "t"}]
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _job(i: str, tenant: str, user: str, session: str, at: datetime) -> Job:
    return Job(
        id=i,
        kind="k",
        tenant=tenant,
        user=user,
        payload={},
        session=session,
        created_at=at,
        run_after=at,
    )


def _walked(others: int) -> list[int]:
    """Jobs a count of open jobs then a claim look at, by session alone then tenant
    alone, with ``others`` pending jobs of others / 10 users of another tenant (in 100
    sessions) due earlier."""
    store = InMemoryStore()
    early = T0 - timedelta(hours=1)
    store.enqueue(
        [
            _job(
                f"o{n}",
                "other",
                f"o{n % (others // 10)}",
                f"x{n % 100}",
                early + timedelta(seconds=n),
            )
            for n in range(others)
        ]
    )
    store.enqueue([_job(f"m{n}", "t", "me", "s", T0 + timedelta(seconds=n)) for n in range(6)])
    walked = []
    for kw in FILTERS:  # what a flush of them waits on
        before = store._jobs.walked
        assert store.count_open_jobs(**kw) == 6
        walked.append(store._jobs.walked - before)
    for kw in FILTERS:
        before = store._jobs.walked
        claimed = store.claim_jobs(T0 + timedelta(minutes=1), limit=2, lease_seconds=30, **kw)
        walked.append(store._jobs.walked - before)
        assert [j.id for j in claimed] == (["m0", "m1"] if "session" in kw else ["m2", "m3"])
        for j in claimed:  # else the user's next claim waits (one user's jobs at once)
            store.finish_job(j.id, j.lease_token)
    return walked


def test_claims_and_counts_walk_the_same_at_100_and_10000_pending_jobs_of_others() -> None:
    small, large = _walked(100), _walked(10_000)
    assert small == large
    assert max(large) <= 10  # the running claims, the group's heads, the jobs taken


def test_a_sweep_walks_the_done_jobs_it_deletes() -> None:
    store = InMemoryStore()
    young = [  # done, due a day after the cut: kept
        replace(
            _job(f"d{n}", "t", f"u{n % 10}", "s", T0 + timedelta(days=1)), status=JobStatus.DONE
        )
        for n in range(10_000)
    ]
    store.enqueue(young)
    store.enqueue(
        [
            Job(
                id=f"old{n}",
                kind="k",
                tenant="t",
                user="u0",
                payload={},
                created_at=T0,
                run_after=T0 - timedelta(seconds=n),
                status=JobStatus.DONE,
            )
            for n in range(7)
        ]
    )
    before = store._jobs.walked
    assert store.sweep_done_jobs(T0 + timedelta(seconds=1), 5) == 5
    assert store.sweep_done_jobs(T0 + timedelta(seconds=1), 5) == 2
    assert store.sweep_done_jobs(T0 + timedelta(seconds=1), 5) == 0
    assert store._jobs.walked - before == 7
    assert {j.id for j in store.list_jobs("t", "u0", status="done")} == {
        f"d{n}" for n in range(0, 10_000, 10)
    }
    assert len(store.list_jobs("t", "u1", status="done")) == 1_000


class Swept(Queue):
    """memjobs31's queue machine, with sweeps of done jobs among its steps."""

    @rule(ahead=st.integers(-30, 60), limit=st.integers(0, 4))
    def sweep(self, ahead: int, limit: int) -> None:
        before = self.now + timedelta(seconds=ahead)
        done = sorted(
            (j.run_after, j.id)
            for j in self.walked.jobs.values()
            if j.status is JobStatus.DONE and j.run_after < before
        )[:limit]
        assert self.store.sweep_done_jobs(before, limit) == len(done)
        for _, i in done:
            del self.walked.jobs[i]


def test_the_indexed_queue_with_sweeps_answers_as_the_walked_one() -> None:
    run_state_machine_as_test(
        Swept,
        settings=settings(
            max_examples=150,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
