"""The job queue's lease contract, on every store: a token per claim, renewal (heartbeat),
fencing of finish/fail after a takeover, and one user's jobs never held by two claims."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memstrata.errors import NotFoundError
from memstrata.jobs import Job, JobStatus, LeaseLostError
from memstrata.store import Store
from store.conftest import STORE_KINDS, make_store

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s = make_store(request.param, tmp_path)
    yield s
    s.close()


def job(
    job_id: str,
    *,
    user: str = "u1",
    tenant: str = "t1",
    after_s: float = 0,
    session: str | None = None,
) -> Job:
    return Job(
        id=job_id,
        kind="k",
        tenant=tenant,
        user=user,
        payload={},
        created_at=T0,
        run_after=T0 + timedelta(seconds=after_s),
        session=session,
    )


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_each_claim_gets_its_own_token(store: Store) -> None:
    store.enqueue([job("a1"), job("b1", user="u2")])
    first = store.claim_jobs(T0, limit=10, lease_seconds=10)
    second = store.claim_jobs(T0, limit=10, lease_seconds=10)
    assert [j.id for j in first] == ["a1"] and [j.id for j in second] == ["b1"]
    assert first[0].lease_token and second[0].lease_token
    assert first[0].lease_token != second[0].lease_token
    (running,) = store.list_jobs("t1", "u1", status="running")
    assert running.lease_token == first[0].lease_token


def test_a_taken_over_job_cannot_be_finished_or_failed_by_its_old_holder(store: Store) -> None:
    store.enqueue([job("j1")])
    (old,) = store.claim_jobs(T0, limit=1, lease_seconds=10)
    (new,) = store.claim_jobs(at(11), limit=1, lease_seconds=10)  # lease ran out: taken over
    assert new.id == "j1" and new.attempts == 2 and new.lease_token != old.lease_token
    with pytest.raises(LeaseLostError, match="no longer held"):
        store.finish_job("j1", lease_token=old.lease_token)
    with pytest.raises(LeaseLostError):
        store.fail_job("j1", "late failure", at(20), lease_token=old.lease_token)
    assert store.renew_leases(old.lease_token or "", at(30)) == []
    (still,) = store.list_jobs("t1", "u1", status="running")
    assert still.lease_token == new.lease_token and still.last_error is None
    store.finish_job("j1", lease_token=new.lease_token)
    (done,) = store.list_jobs("t1", "u1", status="done")
    assert done.lease_token is None and done.lease_until is None
    with pytest.raises(LeaseLostError):  # a finished job is not held by anyone
        store.finish_job("j1", lease_token=new.lease_token)
    with pytest.raises(NotFoundError):
        store.finish_job("nope", lease_token=new.lease_token)


def test_a_renewed_lease_is_not_claimed_by_anyone_else(store: Store) -> None:
    store.enqueue([job("j1"), job("j2")])
    claim = store.claim_jobs(T0, limit=10, lease_seconds=10)
    token = claim[0].lease_token or ""
    assert {j.lease_token for j in claim} == {token}
    assert store.renew_leases(token, at(25)) == ["j1", "j2"]
    assert store.claim_jobs(at(20), limit=10, lease_seconds=10) == []  # past the first lease
    store.finish_job("j1", lease_token=token)
    assert store.renew_leases(token, at(40)) == ["j2"]  # j1 is not held any more
    assert store.claim_jobs(at(39), limit=10, lease_seconds=10) == []
    (again,) = store.claim_jobs(at(41), limit=10, lease_seconds=10)  # holder died after 40
    assert again.id == "j2" and again.lease_token != token


def test_one_users_jobs_are_never_held_by_two_claims(store: Store) -> None:
    store.enqueue([job("a1"), job("a2"), job("b1", user="u2"), job("c1", tenant="t2")])
    first = store.claim_jobs(T0, limit=1, lease_seconds=10)
    assert [j.id for j in first] == ["a1"]
    # a2 is due but u1 is busy: the next claims take other users, one user per claim
    got = [store.claim_jobs(T0, limit=10, lease_seconds=10) for _ in range(3)]
    assert sorted(j.id for claim in got for j in claim) == ["b1", "c1"]
    assert all(len({(j.tenant, j.user) for j in claim}) <= 1 for claim in got)
    store.finish_job("a1", lease_token=first[0].lease_token)
    assert [j.id for j in store.claim_jobs(T0, limit=10, lease_seconds=10)] == ["a2"]


def test_a_user_is_free_again_once_the_holders_lease_expired(store: Store) -> None:
    store.enqueue([job("a1"), job("a2", after_s=5)])
    store.claim_jobs(T0, limit=1, lease_seconds=10)
    assert store.claim_jobs(at(6), limit=10, lease_seconds=10) == []
    taken = store.claim_jobs(at(10), limit=10, lease_seconds=10)  # holder died: both go
    assert [j.id for j in taken] == ["a1", "a2"]


def test_session_filter_and_the_user_rule_together(store: Store) -> None:
    store.enqueue([job("s1", session="x"), job("s2", session="y")])
    (held,) = store.claim_jobs(T0, limit=1, lease_seconds=10, session="y")
    assert held.id == "s2"
    # the flush of session x waits: the user is busy with session y's job
    assert store.claim_jobs(T0, limit=10, lease_seconds=10, user="u1", session="x") == []
    assert store.count_open_jobs(tenant="t1", user="u1", session="x") == 1
    assert store.count_open_jobs(tenant="t1", user="u1") == 2
    assert store.count_open_jobs() == 2
    store.fail_job("s2", "boom", None, lease_token=held.lease_token)
    assert store.count_open_jobs(tenant="t1", user="u1") == 1
    (s1,) = store.claim_jobs(T0, limit=10, lease_seconds=10, user="u1", session="x")
    assert s1.id == "s1" and s1.status is JobStatus.RUNNING
