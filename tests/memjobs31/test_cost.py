"""What memory:// walks for a claim, a count, a list of jobs, a user's purge and the
user's newest turn (store/memory.py, store/memory_jobs.py; memjobs31): the same at 100 and
at 1,000 finished jobs / turns of others. Until memjobs31 each call walked every job the
store ever held (finished ones are kept, as in the SQL stores) and ``add_message``'s look-up
of the user's newest turn sorted every record of the user; these tests fail there."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import pytest

from memstrata.filters import Filters
from memstrata.jobs import Job
from memstrata.records import AccessControl, Content, MemoryRecord, RecordType, Visibility
from memstrata.scope import Scope
from memstrata.store import RecordWrite
from memstrata.store.memory import InMemoryStore
from memstrata.store.types import ListQuery

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Seen(Job):
    """A job that notes whose status or owner was read (``dataclasses.replace`` keeps the class)."""

    ids: ClassVar[set[str]] = set()

    def __getattribute__(self, name: str) -> Any:
        if name in ("status", "tenant", "user"):
            Seen.ids.add(object.__getattribute__(self, "id"))
        return object.__getattribute__(self, name)


def _job(i: str, user: str, at: datetime = T0, dedup: str | None = None) -> Job:
    return Seen(
        id=i,
        kind="k",
        tenant="t",
        user=user,
        payload={},
        created_at=at,
        run_after=at,
        dedup_key=dedup,
    )


def _jobs_walked(finished: int) -> list[int]:
    store = InMemoryStore()
    for n in range(finished):  # jobs of other users, done and failed
        user = f"old{n % 7}"
        store.enqueue([_job(f"old-{n}", user, dedup="same")])
        (claimed,) = store.claim_jobs(T0, limit=1, lease_seconds=30, user=user, tenant="t")
        if n % 3:
            store.finish_job(claimed.id, claimed.lease_token)
        else:
            store.fail_job(claimed.id, "boom", None, claimed.lease_token)
    store.enqueue([_job("mine-1", "me"), _job("mine-2", "me", T0 + timedelta(seconds=1))])
    walked = []
    calls: list[Callable[[], object]] = [
        lambda: store.enqueue([_job("again", "me", dedup="same")]),
        lambda: store.claim_jobs(T0 + timedelta(seconds=5), limit=1, lease_seconds=30),
        lambda: store.count_open_jobs(tenant="t", user="me"),
        lambda: store.list_jobs("t", "me", status="pending"),
        lambda: store.stats(Scope("t", "me")),
        lambda: store.renew_leases("no such token", T0),
        lambda: store.purge_user("t", "me"),
    ]
    for call in calls:
        Seen.ids.clear()
        call()
        walked.append(len(Seen.ids))
    return walked


def test_job_calls_walk_the_same_at_100_and_1000_finished_jobs() -> None:
    assert _jobs_walked(100) == _jobs_walked(1000)


def _turn(i: int, user: str) -> RecordWrite:
    at = T0 + timedelta(seconds=i)
    return RecordWrite(
        MemoryRecord(
            id=f"{user}-{i}",
            tenant="t",
            user=user,
            type=RecordType.MESSAGE,
            content=Content(f"turn {i}"),
            content_hash=f"h{user}{i}",
            session=f"s{i % 3}",
            observed_at=at,
            created_at=at,
            updated_at=at,
        ),
        None,
        ("turn",),
    )


EVERY_TURN = Filters(
    types=frozenset({RecordType.MESSAGE}), include_deleted=True, include_superseded=True
)


def _turns_walked(turns: int, monkeypatch: pytest.MonkeyPatch) -> int:
    store = InMemoryStore()
    store.insert([_turn(i, "me") for i in range(turns)])
    store.insert([_turn(i, "other") for i in range(turns)])
    seen = [0]
    visible_in = MemoryRecord.visible_in

    def counted(self: MemoryRecord, scope: Scope) -> bool:
        seen[0] += 1
        return visible_in(self, scope)

    with monkeypatch.context() as m:
        m.setattr(MemoryRecord, "visible_in", counted)
        (newest,) = store.list_many([ListQuery(Scope("t", "me"), EVERY_TURN, 1, 0, True)])[0]
        (oldest,) = store.list(Scope("t", "me"), EVERY_TURN, limit=1, newest_first=False)
    assert (newest.id, oldest.id) == (f"me-{turns - 1}", "me-0")
    return seen[0]


def test_the_users_newest_turn_walks_the_same_at_100_and_1000_turns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _turns_walked(100, monkeypatch) == _turns_walked(1000, monkeypatch)


def _reader_purge_walked(others: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """Versions a purge of the reader ``carol`` looks at, beside ``others`` records of the
    tenant that do not name her (and two that do)."""
    from memstrata.store import memory

    store = InMemoryStore()
    store.insert([_turn(i, "bob") for i in range(others)])
    named = [_turn(others + i, "dan") for i in range(2)]
    shared = AccessControl(Visibility.SHARED, allowed_users=("carol",))
    store.insert([replace(w, record=replace(w.record, access=shared)) for w in named])
    seen = [0]
    from memstrata.store.purged_reader import without_reader

    def counted(record: MemoryRecord, user: str) -> MemoryRecord:
        seen[0] += 1
        return without_reader(record, user)

    with monkeypatch.context() as m:
        m.setattr(memory, "without_reader", counted)
        store.purge_user("t", "carol")
    kept = store.list(Scope("t", "dan"), Filters(), limit=10)
    assert [r.access.allowed_users for r in kept] == [(), ()]
    return seen[0]


def test_a_readers_purge_walks_the_records_naming_them(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _reader_purge_walked(100, monkeypatch) == _reader_purge_walked(1000, monkeypatch)


def test_a_readers_purge_reaches_imported_past_versions_naming_them() -> None:
    """An import's earlier versions (``insert_history``) that name a reader are found by
    that reader's purge too (indexed as they are kept, not only at a write's ``_changed``)."""
    store = InMemoryStore()
    current = _turn(1, "dan").record
    shared = AccessControl(Visibility.SHARED, allowed_users=("carol",))
    past = replace(current, version=1, access=shared, content=Content("said before"))
    current = replace(current, version=2)
    with store.transaction() as tx:
        tx.insert([RecordWrite(current, None, ("turn",))])
        tx.insert_history([[past]])
    store.purge_user("t", "carol")
    versions = store.history(Scope("t", "dan"), current.id)
    assert [(v.version, v.access.allowed_users) for v in versions] == [(1, ()), (2, ()), (3, ())]
