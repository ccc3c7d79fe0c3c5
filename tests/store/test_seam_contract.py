"""Contract of the storage seam's newer interfaces, on every backend.

Unit of work, counters, session buffer, and the interface split itself. A new backend
(PostgreSQL) inherits these through the ``store`` fixture.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from memstrata.errors import ConflictError, NotFoundError, ValidationError
from memstrata.filters import Filters
from memstrata.jobs import Job
from memstrata.records import RecordStatus, RecordType, Role
from memstrata.scope import Scope
from memstrata.search.tokenize import tokenize
from memstrata.store import RecordWrite, Store
from memstrata.store.base import (
    CandidateSearch,
    Counters,
    EmbeddingCacheStore,
    JobQueue,
    RecordStore,
    SessionBuffer,
    StoreMeta,
    UnitOfWork,
)

from .conftest import T0, Maker, unit

ME = Scope("t1", "u1")
OTHER_USER = Scope("t1", "u2")
OTHER_TENANT = Scope("t2", "u1")


def job(job_id: str, *, user: str = "u1") -> Job:
    return Job(
        id=job_id,
        kind="ingest",
        tenant="t1",
        user=user,
        payload={"ids": []},
        created_at=T0,
        run_after=T0,
    )


def turn(
    maker: Maker,
    text: str,
    *,
    session: str = "s1",
    role: Role = Role.USER,
    minutes: int | None = None,
    user: str = "u1",
) -> RecordWrite:
    kw = {} if minutes is None else {"observed_at": T0 + timedelta(minutes=minutes)}
    return maker.write(
        maker.record(text, type=RecordType.MESSAGE, role=role, session=session, user=user, **kw)
    )


def test_store_implements_every_interface(store: Store) -> None:
    for interface in (
        StoreMeta,
        RecordStore,
        CandidateSearch,
        EmbeddingCacheStore,
        JobQueue,
        SessionBuffer,
        Counters,
        Store,
    ):
        assert isinstance(store, interface), interface.__name__
    with store.transaction() as tx:
        assert isinstance(tx, UnitOfWork)


# --- unit of work -----------------------------------------------------------------------------
def test_unit_of_work_commits_records_index_and_jobs_together(store: Store, maker: Maker) -> None:
    w = turn(maker, "I moved to Lisbon")
    with store.transaction() as tx:
        tx.append_turns([w])
        tx.enqueue([job("j1")])
        # reads inside the transaction see its own writes
        assert tx.get(ME, w.record.id) == w.record
    assert store.get(ME, w.record.id) == w.record
    assert [j.id for j in store.list_jobs("t1", "u1")] == ["j1"]
    assert [c.id for c in store.lexical_search(ME, tokenize("Lisbon"), 5, Filters())] == [
        w.record.id
    ]
    assert store.vector_search(ME, w.vector, 1, Filters())[0].id == w.record.id  # type: ignore[arg-type]


@pytest.mark.parametrize("fail_at", ["enqueue", "after", "replace"])
def test_unit_of_work_rolls_back_everything_on_error(
    store: Store, maker: Maker, fail_at: str
) -> None:
    base = maker.write(text="an older note")
    store.insert([base])
    w = turn(maker, "I moved to Lisbon")
    store.enqueue([job("dup")])

    class Boom(Exception):
        pass

    with pytest.raises((Boom, ValidationError, ConflictError)), store.transaction() as tx:
        tx.append_turns([w])
        tx.replace(
            ME,
            RecordWrite(
                replace(
                    base.record, version=2, content=replace(base.record.content, raw="changed")
                ),
                None,
                ("changed",),
            ),
            expected_version=1,
        )
        tx.set_status(ME, [base.record.id], RecordStatus.DELETED, T0)
        if fail_at == "enqueue":
            tx.enqueue([job("j1"), job("dup")])  # a duplicate job id fails the batch
        elif fail_at == "replace":
            tx.replace(
                ME, RecordWrite(replace(base.record, version=2), None, ()), expected_version=1
            )  # stale: the record is at version 3
        else:
            tx.enqueue([job("j1")])
            raise Boom
    with pytest.raises(NotFoundError):
        store.get(ME, w.record.id)
    assert store.get(ME, base.record.id) == base.record  # content, status, version restored
    assert [r.version for r in store.history(ME, base.record.id)] == [1]
    assert [j.id for j in store.list_jobs("t1", "u1")] == ["dup"]
    assert store.lexical_search(ME, tokenize("Lisbon"), 5, Filters()) == []
    assert store.lexical_search(ME, ["changed"], 5, Filters()) == []
    assert [c.id for c in store.lexical_search(ME, tokenize("older"), 5, Filters())] == [
        base.record.id
    ]
    assert [c.id for c in store.vector_search(ME, w.vector, 5, Filters())] == [base.record.id]  # type: ignore[arg-type]
    # the store is usable afterwards
    store.insert([w])
    assert store.get(ME, w.record.id) == w.record


def test_unit_of_work_find_then_insert(store: Store, maker: Maker) -> None:
    w = maker.write(text="take 50 mg daily")
    with store.transaction() as tx:
        assert tx.find_by_hash(ME, w.record.content_hash, ["note"]) is None
        tx.insert([w])
        assert tx.find_by_hash(ME, w.record.content_hash, ["note"]) == w.record


def test_append_turns_takes_only_messages(store: Store, maker: Maker) -> None:
    note = maker.write(text="a plain note")
    with pytest.raises(ValidationError, match="append_turns"):
        store.append_turns([turn(maker, "hello"), note])
    assert store.count(ME, Filters(include_deleted=True)) == 0


# --- session buffer ----------------------------------------------------------------------------
def test_recent_turns_newest_n_oldest_first(store: Store, maker: Maker) -> None:
    turns = [turn(maker, f"turn {i}", minutes=i) for i in range(6)]
    same_time = turn(maker, "tied with turn 5", minutes=5, role=Role.ASSISTANT)
    other_session = turn(maker, "elsewhere", session="s2", minutes=9)
    foreign = turn(maker, "not mine", user="u2", minutes=9)
    note = maker.write(
        maker.record("a note in the session", session="s1", observed_at=T0 + timedelta(minutes=8))
    )
    store.insert([*turns, same_time, other_session, foreign, note])
    store.set_status(ME, [turns[4].record.id], RecordStatus.DELETED, T0)
    s1 = Scope("t1", "u1", session="s1")
    got = store.recent_turns(s1, 3)
    assert [r.id for r in got] == [turns[3].record.id, turns[5].record.id, same_time.record.id]
    assert [r.id for r in store.recent_turns(s1, 100)] == [
        w.record.id for w in (*turns[:4], turns[5], same_time)
    ]
    assert store.recent_turns(s1, 0) == []
    assert store.recent_turns(ME, 5) == []  # no session, no buffer
    assert store.recent_turns(Scope("t1", "u2", session="s1"), 5) == [foreign.record]
    assert store.recent_turns(Scope("t2", "u1", session="s1"), 5) == []


# --- counters ------------------------------------------------------------------------------------
def test_touch_counts_without_a_version(store: Store, maker: Maker) -> None:
    w = maker.write()
    store.insert([w])
    store.touch(ME, [w.record.id, w.record.id], T0 + timedelta(hours=2))
    store.touch(ME, [w.record.id], T0 + timedelta(hours=1))  # an older access: count only
    store.flush_counters()
    r = store.get(ME, w.record.id)
    assert (r.access_count, r.last_accessed_at, r.version, r.updated_at) == (
        2,
        T0 + timedelta(hours=2),
        1,
        w.record.updated_at,
    )
    assert len(store.history(ME, w.record.id)) == 1
    # a counter never conflicts with an update based on the version read before it
    store.replace(ME, RecordWrite(replace(w.record, version=2), None, w.terms), expected_version=1)


def test_named_counters_add_and_read_without_versions(store: Store, maker: Maker) -> None:
    a, b = maker.write(), maker.write()
    theirs = maker.write(maker.record("theirs", user="u2"))
    store.insert([a, b, theirs])
    ids = [a.record.id, b.record.id]
    assert store.counts(ME, "hits", ids) == {a.record.id: 0, b.record.id: 0}
    store.add_counts(ME, "hits", {a.record.id: 1, b.record.id: 2})
    store.add_counts(ME, "hits", {a.record.id: 3, "missing": 1})
    store.add_counts(ME, "visits", {a.record.id: 1})
    store.flush_counters()
    assert store.counts(ME, "hits", [*ids, "missing"]) == {a.record.id: 4, b.record.id: 2}
    assert store.counts(ME, "visits", ids) == {a.record.id: 1, b.record.id: 0}
    assert [r.version for r in store.history(ME, a.record.id)] == [1]
    # other users' records: ignored and invisible
    store.add_counts(ME, "hits", {theirs.record.id: 5})
    store.add_counts(OTHER_TENANT, "hits", {a.record.id: 5})
    store.flush_counters()
    assert store.counts(OTHER_USER, "hits", [theirs.record.id]) == {theirs.record.id: 0}
    assert store.counts(OTHER_TENANT, "hits", [a.record.id]) == {}
    assert store.counts(ME, "hits", [a.record.id]) == {a.record.id: 4}


def test_purge_removes_counters(store: Store, maker: Maker) -> None:
    w = maker.write()
    store.insert([w])
    store.add_counts(ME, "hits", {w.record.id: 3})
    store.flush_counters()
    store.purge(ME, [w.record.id])
    store.insert([w])  # the same id again starts from zero
    assert store.counts(ME, "hits", [w.record.id]) == {w.record.id: 0}


def test_vectors_survive_counter_updates(store: Store, maker: Maker) -> None:
    ws = [maker.write() for _ in range(5)]
    store.insert(ws)
    q = unit(maker.rng)
    before = store.vector_search(ME, q, 5, Filters())
    store.touch(ME, [w.record.id for w in ws], T0)
    store.add_counts(ME, "hits", {w.record.id: 1 for w in ws})
    store.flush_counters()
    assert store.vector_search(ME, q, 5, Filters()) == before
