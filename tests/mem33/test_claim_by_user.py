"""A claim (and an open count) of memory://'s jobs by user alone, no tenant or session,
walks that user name's pending jobs (``JobIndex.of_name``, mem33), not every user's first
pending job, with the claims of main's index (tests/mem33/oracle.py ``OldJobIndex``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata.jobs import Job
from memstrata.store.memory import InMemoryStore
from memstrata.store.memory_jobs import JobIndex

from .oracle import OldJobIndex

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _job(n: int, tenant: str, user: str, after: int, session: str | None = None) -> Job:
    return Job(
        id=f"j{n:06d}",
        kind="k",
        tenant=tenant,
        user=user,
        payload={},
        session=session,
        created_at=T0 + timedelta(seconds=n),
        run_after=T0 + timedelta(seconds=after),
    )


def _walked(others: int) -> list[int]:
    """Jobs a claim and an open count by ``ann`` alone look at, beside ``others`` users'
    pending jobs due before hers."""
    store = InMemoryStore()
    store.enqueue([_job(i, "acme", f"u{i}", 0) for i in range(others)])
    store.enqueue([_job(others + i, "acme", "ann", 10) for i in range(3)])
    now = T0 + timedelta(seconds=60)
    walked = []
    for call in (
        lambda: store.count_open_jobs(user="ann") == 3,
        lambda: (
            [j.user for j in store.claim_jobs(now, limit=5, lease_seconds=30, user="ann")]
            == ["ann"] * 3
        ),
    ):
        before = store._jobs.walked
        assert call()
        walked.append(store._jobs.walked - before)
    return walked


def test_a_claim_by_user_alone_walks_that_users_jobs() -> None:
    # Before (every user's first pending job): 1,001 and 10,001 for the count, 1,004 and
    # 10,004 for the claim; now 1 and 4 (ann's) at both sizes.
    small, large = _walked(1_000), _walked(10_000)
    assert small == large
    assert max(small) <= 5


call_st = st.fixed_dictionaries(
    {
        "tenant": st.sampled_from([None, "acme", "beta"]),
        "user": st.sampled_from([None, "ann", "bob"]),
        "session": st.sampled_from([None, "s1"]),
        "limit": st.integers(1, 3),
    }
)
step_st = st.one_of(
    st.tuples(
        st.just("enqueue"),
        st.lists(
            st.tuples(
                st.sampled_from(["acme", "beta"]),
                st.sampled_from(["ann", "bob", "cy"]),
                st.integers(0, 20),
                st.sampled_from([None, "s1", "s2"]),
            ),
            max_size=4,
        ),
    ),
    st.tuples(st.just("claim"), call_st),
    st.tuples(st.just("finish"), st.integers(0, 5)),
    st.tuples(st.just("tick"), st.integers(1, 40)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(step_st, max_size=25))
def test_claims_as_mains_index(steps: list[Any]) -> None:
    new, old = InMemoryStore(), InMemoryStore()
    old._jobs = OldJobIndex()
    now, n, claimed = T0, 0, list[str]()
    for step in steps:
        if step[0] == "enqueue":
            jobs = [_job(n + i, t, u, a, s) for i, (t, u, a, s) in enumerate(step[1])]
            n += len(jobs)
            new.enqueue(jobs)
            old.enqueue(jobs)
        elif step[0] == "claim":
            c = step[1]
            filters = {k: c[k] for k in ("tenant", "user", "session")}
            got = [
                s.claim_jobs(now, limit=c["limit"], lease_seconds=30, **filters) for s in (new, old)
            ]
            assert [j.id for j in got[0]] == [j.id for j in got[1]]
            assert new.count_open_jobs(**filters) == old.count_open_jobs(**filters)
            claimed += [j.id for j in got[0]]
        elif step[0] == "finish":
            if step[1] < len(claimed):
                job_id = claimed.pop(step[1])
                for s in (new, old):
                    if s._jobs.get(job_id) is not None:
                        s.finish_job(job_id)
        else:
            now += timedelta(seconds=step[1])  # leases of 30 s expire
        assert _states(new) == _states(old)  # the lease tokens differ
    fresh = JobIndex()
    for job in new._jobs.values():
        fresh.put(job)
    assert new._jobs.of_name == fresh.of_name


def _states(s: InMemoryStore) -> list[Any]:
    return sorted((j.id, j.status, j.attempts, j.lease_until) for j in s._jobs.values())
