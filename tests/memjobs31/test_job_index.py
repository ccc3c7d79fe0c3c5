"""memory://'s indexed job queue (store/memory_jobs.py, memjobs31) against the queue it
replaced: every job walked on each call (:class:`Walked`, the code of store/memory.py
before memjobs31). A hypothesis state machine enqueues (with and without a duplicate key,
in a transaction taken back), claims (with and without tenant, user, session and
``due_before``, leases expiring as the clock moves), finishes, fails (retried or not),
gives back, renews and purges users, and after each step compares every answer (claimed
ids and jobs, open counts by every filter, lists by status, stats) and checks the indexes
against the jobs they index. It also checks the user's newest turns against a sort."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from memstrata.errors import MemstrataError
from memstrata.filters import Filters
from memstrata.jobs import Job, JobStatus
from memstrata.records import (
    AccessControl,
    Content,
    MemoryRecord,
    RecordStatus,
    RecordType,
    Visibility,
)
from memstrata.scope import Scope
from memstrata.store import RecordWrite
from memstrata.store.memory import InMemoryStore
from memstrata.store.memory_jobs import JobIndex, queue_key
from memstrata.store.types import ListQuery

T0 = datetime(2026, 1, 1, tzinfo=UTC)
OWNERS = [("a", "bob"), ("a", "dan"), ("b", "bob")]
SESSIONS = [None, "s1", "s2"]
_OPEN = (JobStatus.PENDING, JobStatus.RUNNING)


class Walked:
    """The job queue as memory:// kept it until memjobs31: one dict, walked by each call."""

    def __init__(self) -> None:
        self.jobs: dict[str, Job] = {}

    def enqueue(self, jobs: list[Job]) -> None:
        fresh: dict[str, Job] = {}
        for job in jobs:
            if job.dedup_key is not None and any(
                (j.tenant, j.user, j.dedup_key) == (job.tenant, job.user, job.dedup_key)
                and j.status in _OPEN
                for j in (*self.jobs.values(), *fresh.values())
            ):
                continue
            fresh[job.id] = job
        self.jobs.update(fresh)

    def claimable(
        self,
        now: datetime,
        limit: int,
        tenant: str | None,
        user: str | None,
        session: str | None,
        due_before: datetime | None,
    ) -> list[str]:
        def ready(j: Job) -> bool:
            if j.status is JobStatus.PENDING:
                due = j.run_after <= (due_before or now)
            else:
                due = (
                    j.status is JobStatus.RUNNING
                    and j.lease_until is not None
                    and j.lease_until <= now
                )
            return due and all(
                want is None or got == want
                for want, got in ((tenant, j.tenant), (user, j.user), (session, j.session))
            )

        if limit <= 0:
            return []
        busy = {
            (j.tenant, j.user)
            for j in self.jobs.values()
            if j.status is JobStatus.RUNNING and j.lease_until is not None and j.lease_until > now
        }
        due = sorted(
            (j for j in self.jobs.values() if ready(j) and (j.tenant, j.user) not in busy),
            key=lambda j: (j.run_after, j.created_at, j.id),
        )
        if not due:
            return []
        owner = (due[0].tenant, due[0].user)
        return [j.id for j in due if (j.tenant, j.user) == owner][:limit]

    def count_open(self, tenant: str | None, user: str | None, session: str | None) -> int:
        return sum(
            j.status in _OPEN
            and all(
                want is None or got == want
                for want, got in ((tenant, j.tenant), (user, j.user), (session, j.session))
            )
            for j in self.jobs.values()
        )

    def list(self, tenant: str, user: str, status: JobStatus | None) -> list[Job]:
        jobs = [
            j
            for j in self.jobs.values()
            if (j.tenant, j.user) == (tenant, user) and (status is None or j.status is status)
        ]
        return sorted(jobs, key=lambda j: (j.created_at, j.id))


def check_index(index: JobIndex) -> None:
    """The indexes hold what a fresh index of the same jobs holds, in the same order."""
    fresh = JobIndex()
    for job in index.values():
        fresh.put(job)
    assert index.of_user == fresh.of_user
    assert index.open == fresh.open
    assert index.running == fresh.running
    assert sorted(k for q in index.queue_of.values() for k in q) == sorted(
        queue_key(j) for j in index.values() if j.status is JobStatus.PENDING
    )
    assert index.queue_of == fresh.queue_of
    # each tenant's and each session's pending jobs queued apart as well (jobs32)
    assert index.of_tenant == fresh.of_tenant
    assert index.of_session == fresh.of_session
    assert index.done == fresh.done
    assert index.heads == fresh.heads
    assert index.dedup == fresh.dedup


class Queue(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.store = InMemoryStore()
        self.walked = Walked()
        self.now = T0
        self.n = 0

    def _ids(self) -> list[str]:
        return sorted(self.walked.jobs)

    @rule(
        owner=st.sampled_from(OWNERS),
        session=st.sampled_from(SESSIONS),
        after=st.integers(-2, 6),
        created=st.integers(0, 3),
        dedup=st.sampled_from([None, None, "d1", "d2"]),
        many=st.integers(1, 3),
        taken_back=st.booleans(),
    )
    def enqueue(
        self,
        owner: tuple[str, str],
        session: str | None,
        after: int,
        created: int,
        dedup: str | None,
        many: int,
        taken_back: bool,
    ) -> None:
        jobs = []
        for _ in range(many):
            self.n += 1
            jobs.append(
                Job(
                    id=f"j{self.n:03d}",
                    kind="k",
                    tenant=owner[0],
                    user=owner[1],
                    payload={},
                    session=session,
                    created_at=T0 + timedelta(seconds=created),
                    run_after=self.now + timedelta(seconds=after),
                    dedup_key=dedup,
                )
            )
        if taken_back:
            with pytest.raises(RuntimeError), self.store.transaction() as uow:
                uow.enqueue(jobs)
                raise RuntimeError("taken back")
            return
        self.store.enqueue(jobs)
        self.walked.enqueue(jobs)

    @rule(seconds=st.integers(1, 40))
    def tick(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)

    @rule(
        limit=st.integers(0, 3),
        owner=st.sampled_from([None, *OWNERS, ("a", None), (None, "bob")]),
        session=st.sampled_from(SESSIONS),
        ahead=st.sampled_from([None, 0, 5, 100]),
        lease=st.sampled_from([10, 30]),
    )
    def claim(
        self,
        limit: int,
        owner: tuple[str | None, str | None] | None,
        session: str | None,
        ahead: int | None,
        lease: int,
    ) -> None:
        tenant, user = owner or (None, None)
        due_before = None if ahead is None else self.now + timedelta(seconds=ahead)
        want = self.walked.claimable(self.now, limit, tenant, user, session, due_before)
        got = self.store.claim_jobs(
            self.now,
            limit=limit,
            lease_seconds=lease,
            tenant=tenant,
            user=user,
            session=session,
            due_before=due_before,
        )
        assert [j.id for j in got] == want
        for j in got:
            old = self.walked.jobs[j.id]
            assert j == replace(
                old,
                status=JobStatus.RUNNING,
                attempts=old.attempts + 1,
                lease_until=self.now + timedelta(seconds=lease),
                lease_token=j.lease_token,
            )
            self.walked.jobs[j.id] = j

    def _pick(self, data: st.DataObject) -> Job | None:
        ids = self._ids()
        return self.walked.jobs[data.draw(st.sampled_from(ids))] if ids else None

    @rule(data=st.data(), fenced=st.booleans(), how=st.sampled_from(["finish", "fail", "retry"]))
    def end(self, data: st.DataObject, fenced: bool, how: str) -> None:
        job = self._pick(data)
        if job is None:
            return
        token = job.lease_token if fenced else None
        if fenced and (token is None or job.status is not JobStatus.RUNNING):
            return
        cleared: dict[str, Any] = {"lease_until": None, "lease_token": None}
        if how == "finish":
            self.store.finish_job(job.id, token)
            new = replace(job, status=JobStatus.DONE, **cleared)
        elif how == "fail":
            self.store.fail_job(job.id, "boom", None, token)
            new = replace(job, status=JobStatus.FAILED, last_error="boom", **cleared)
        else:
            at = self.now + timedelta(seconds=3)
            self.store.fail_job(job.id, "again", at, token)
            new = replace(
                job, status=JobStatus.PENDING, last_error="again", run_after=at, **cleared
            )
        self.walked.jobs[job.id] = new

    @rule(data=st.data())
    def give_back(self, data: st.DataObject) -> None:
        job = self._pick(data)
        if job is None or job.status is not JobStatus.RUNNING:
            return
        self.store.give_back_job(job.id, "stop", self.now, job.lease_token)
        self.walked.jobs[job.id] = replace(
            job,
            status=JobStatus.PENDING,
            last_error="stop",
            lease_until=None,
            lease_token=None,
            run_after=self.now,
            attempts=max(job.attempts - 1, 0),
        )

    @rule(data=st.data())
    def renew(self, data: st.DataObject) -> None:
        job = self._pick(data)
        if job is None or job.lease_token is None:
            return
        until = self.now + timedelta(seconds=50)
        held = sorted(
            j.id
            for j in self.walked.jobs.values()
            if j.lease_token == job.lease_token and j.status is JobStatus.RUNNING
        )
        assert self.store.renew_leases(job.lease_token, until) == held
        for i in held:
            self.walked.jobs[i] = replace(self.walked.jobs[i], lease_until=until)

    @rule(owner=st.sampled_from(OWNERS))
    def purge_user(self, owner: tuple[str, str]) -> None:
        mine = [i for i, j in self.walked.jobs.items() if (j.tenant, j.user) == owner]
        report = self.store.purge_user(*owner)
        assert (report.jobs, report.remaining) == (len(mine), 0)
        for i in mine:
            del self.walked.jobs[i]

    @rule(data=st.data())
    def stale_token(self, data: st.DataObject) -> None:
        job = self._pick(data)
        if job is None:
            return
        with pytest.raises(MemstrataError):
            self.store.finish_job(job.id, "not-a-token")

    @invariant()
    def same_answers(self) -> None:
        check_index(self.store._jobs)
        assert dict(self.store._jobs.by_id) == self.walked.jobs
        for tenant, user in OWNERS:
            for status in (None, *JobStatus):
                got = self.store.list_jobs(tenant, user, status=status and status.value)
                assert got == self.walked.list(tenant, user, status)
            stats = self.store.stats(Scope(tenant, user))
            mine = self.walked.list(tenant, user, None)
            assert stats.pending_jobs == sum(j.status in _OPEN for j in mine)
            assert stats.failed_jobs == sum(j.status is JobStatus.FAILED for j in mine)
        for t in (None, "a", "b"):
            for u in (None, "bob", "dan"):
                for session in SESSIONS:
                    assert self.store.count_open_jobs(
                        tenant=t, user=u, session=session
                    ) == self.walked.count_open(t, u, session)


def test_indexed_queue_answers_as_the_walked_one() -> None:
    run_state_machine_as_test(
        Queue,
        settings=settings(
            max_examples=150,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )


# --- a user's turns, in list order ---------------------------------------------------------

TURN_OWNERS = [("a", "bob"), ("a", "dan")]
TURNS = Filters(
    types=frozenset({RecordType.MESSAGE}), include_deleted=True, include_superseded=True
)
LISTS = [
    TURNS,
    Filters(types=frozenset({RecordType.MESSAGE})),
    Filters.parse({"types": ["message"], "observed_after": "2026-01-01T00:03:00+00:00"}),
]


def _sorted_walk(store: InMemoryStore, q: ListQuery) -> list[str]:
    """The list path before memjobs31: every entry of the user, filtered, sorted."""
    rows = [e for e in store._own(q.scope.tenant, q.scope.user) if e.record.visible_in(q.scope)]
    rows = [e for e in rows if q.filters.matches(e.record)]
    rows.sort(key=lambda e: (e.record.observed_at, e.seq), reverse=q.newest_first)
    offset = max(0, q.offset)
    return [e.record.id for e in rows[offset : offset + q.limit]]


class Turns(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.store = InMemoryStore()
        self.n = 0
        self.ids: list[tuple[str, str, str]] = []

    def _record(self, owner: tuple[str, str], rid: str, minute: int, message: bool) -> Any:
        when = T0 + timedelta(minutes=minute)
        readers = (("carol",), ("carol", "dan"), ())[minute % 3]
        return MemoryRecord(
            id=rid,
            tenant=owner[0],
            user=owner[1],
            type=RecordType.MESSAGE if message else RecordType.NOTE,
            content=Content(f"text {rid} {minute}"),
            session="s1" if minute % 2 else "s2",
            created_at=when,
            updated_at=when,
            observed_at=when,
            content_hash=f"h{rid}{minute}{message}",
            access=AccessControl(Visibility.SHARED, allowed_users=readers),
        )

    @rule(
        owner=st.sampled_from(TURN_OWNERS),
        minute=st.integers(0, 6),
        message=st.booleans(),
        taken_back=st.booleans(),
    )
    def insert(self, owner: tuple[str, str], minute: int, message: bool, taken_back: bool) -> None:
        self.n += 1
        rid = f"r{self.n:03d}"
        write = RecordWrite(self._record(owner, rid, minute, message), None, ("text",))
        if taken_back:
            with pytest.raises(RuntimeError), self.store.transaction() as uow:
                uow.insert([write])
                raise RuntimeError("taken back")
            return
        self.store.insert([write])
        self.ids.append((*owner, rid))

    @rule(data=st.data(), minute=st.integers(0, 6), message=st.booleans())
    def replace_one(self, data: st.DataObject, minute: int, message: bool) -> None:
        if not self.ids:
            return
        tenant, user, rid = data.draw(st.sampled_from(self.ids))
        scope = Scope(tenant, user)
        old = self.store.get(scope, rid, include_deleted=True)
        new = replace(
            self._record((tenant, user), rid, minute, message),
            version=old.version + 1,
            created_at=old.created_at,
            status=old.status,
            deleted_at=old.deleted_at,
        )
        self.store.replace(scope, RecordWrite(new, None, ("text",)), expected_version=old.version)

    @rule(data=st.data(), status=st.sampled_from([RecordStatus.DELETED, RecordStatus.ACTIVE]))
    def set_status(self, data: st.DataObject, status: RecordStatus) -> None:
        if not self.ids:
            return
        tenant, user, rid = data.draw(st.sampled_from(self.ids))
        self.store.set_status(Scope(tenant, user), [rid], status, T0 + timedelta(hours=1))

    @rule(data=st.data())
    def purge(self, data: st.DataObject) -> None:
        if not self.ids:
            return
        tenant, user, rid = data.draw(st.sampled_from(self.ids))
        self.store.purge(Scope(tenant, user), [rid])
        self.ids.remove((tenant, user, rid))

    @rule(owner=st.sampled_from(TURN_OWNERS))
    def purge_user(self, owner: tuple[str, str]) -> None:
        assert self.store.purge_user(*owner).remaining == 0
        self.ids = [i for i in self.ids if i[:2] != owner]

    @rule(reader=st.sampled_from(["carol", "dan"]))
    def purge_reader(self, reader: str) -> None:
        """A reader's purge: no version of any record of the tenant names them after."""
        self.store.purge_user("a", reader)
        self.ids = [i for i in self.ids if i[:2] != ("a", reader)]
        for e in self.store._entries.values():
            for v in (*e.history, e.record):
                assert reader not in v.access.allowed_users

    @invariant()
    def readers_indexed(self) -> None:
        for e in self.store._entries.values():
            for v in (*e.history, e.record):
                for reader in v.access.allowed_users:
                    assert (v.user, v.id) in self.store._readers[v.tenant, reader]

    @invariant()
    def same_lists(self) -> None:
        turns = {k: [(t, s, rid) for t, s, rid in v] for k, v in self.store._turns.items()}
        want: dict[tuple[str, str], list[tuple[datetime, int, str]]] = {}
        for e in self.store._entries.values():
            r = e.record
            if r.type is RecordType.MESSAGE:
                want.setdefault((r.tenant, r.user), []).append((r.observed_at, e.seq, r.id))
        assert turns == {k: sorted(v) for k, v in want.items()}
        for tenant, user in TURN_OWNERS:
            for filters in LISTS:
                for newest in (True, False):
                    for limit, offset in ((1, 0), (3, 1), (100, 0)):
                        q = ListQuery(Scope(tenant, user), filters, limit, offset, newest)
                        got = [r.id for r in self.store.list_many([q])[0]]
                        assert got == _sorted_walk(self.store, q)


def test_the_users_turns_list_as_a_sort_of_every_record() -> None:
    run_state_machine_as_test(
        Turns,
        settings=settings(
            max_examples=100,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
