"""A process's vector copy misses no row that commits after a newer one was loaded.

``vseq`` is taken when a row is written and becomes visible when its transaction commits,
so two writers of one user commit out of order: a copy that loaded the later vseq first
must still load the earlier one once it commits (before, it never did: the record was lost
to that process's dense search until something of the user was deleted)."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import psycopg
import pytest

from memstrata.filters import Filters
from memstrata.scope import Scope
from memstrata.store.postgres import PostgresStore
from store.conftest import Maker

ME = Scope("t1", "u1")


def _found(store: PostgresStore, vector: object, rid: str) -> bool:
    hits = store.vector_search(ME, np.asarray(vector, np.float32), 50, Filters())
    return rid in {h.id for h in hits}


def test_a_row_committed_after_a_newer_one_was_loaded_is_found(pg_url: str) -> None:
    m = Maker()
    slow, fast, reader = PostgresStore(pg_url), PostgresStore(pg_url), PostgresStore(pg_url)
    try:
        reader.insert([m.write(m.record("warm up"))])
        early, late = m.write(m.record("written first")), m.write(m.record("committed first"))
        with slow.transaction() as uow:
            uow.insert([early])  # takes the lower vseq, commits last
            fast.insert([late])
            assert _found(reader, late.vector, late.record.id)  # the copy loads the later vseq
            assert not _found(reader, early.vector, early.record.id)  # not committed yet
        assert _found(reader, early.vector, early.record.id)
        # and a copy that settles keeps finding both
        assert _found(reader, late.vector, late.record.id)
        assert _found(reader, early.vector, early.record.id)
    finally:
        for s in (slow, fast, reader):
            s.close()


def _copy(store: PostgresStore) -> Any:
    [(copy, _)] = store._vectors._users.values()
    return copy


def _settled(store: PostgresStore) -> bool:
    [(copy, settling)] = store._vectors._users.values()
    return bool(settling.safe >= copy.last_rev and not settling.pending)


def _count_loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    loads: list[str] = []
    execute = psycopg.Cursor.execute

    def counted(self: Any, query: Any, *a: Any, **k: Any) -> Any:
        if "JOIN records r ON r.seq = v.seq" in str(query):
            loads.append(str(query))
        return execute(self, query, *a, **k)

    monkeypatch.setattr(psycopg.Cursor, "execute", counted)
    return loads


def test_rows_read_again_while_unsettled_are_not_loaded_twice(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = Maker()
    other, reader = PostgresStore(pg_url), PostgresStore(pg_url)
    try:
        with other.transaction() as uow:  # a transaction in flight: nothing settles
            held = m.write(m.record("held open"))
            uow.insert([held])
            writes = []
            for i in range(5):
                w = m.write(m.record(f"note {i} of five"))
                reader.insert([w])
                writes.append(w)
                assert _found(reader, w.vector, w.record.id)
            copy = _copy(reader)
            assert (copy.n, copy.dead) == (5, 0)  # each row once, however often read again
            assert not _settled(reader)
            loads = _count_loads(monkeypatch)
            for w in writes:  # unsettled, nothing new: no rows read again
                assert _found(reader, w.vector, w.record.id)
            assert loads == []
            monkeypatch.undo()
        assert _found(reader, held.vector, held.record.id)  # committed last, vseq lowest
        copy = _copy(reader)
        assert (copy.n, copy.dead) == (6, 0)
        _found(reader, writes[0].vector, writes[0].record.id)  # a snapshot after it ended
        assert _settled(reader)
    finally:
        other.close()
        reader.close()


def test_concurrent_writers_and_a_reader_lose_no_vector(pg_url: str) -> None:
    m = Maker()
    writers = [PostgresStore(pg_url) for _ in range(3)]
    reader = PostgresStore(pg_url)
    batches = [[m.write(m.record(f"writer {w} note {i}")) for i in range(25)] for w in range(3)]
    probe = np.asarray(batches[0][0].vector, np.float32)
    done = threading.Event()

    def write(store: PostgresStore, batch: list[object]) -> None:
        for w in batch:
            store.insert([w])

    def read() -> None:
        while not done.is_set():
            reader.vector_search(ME, probe, 5, Filters())

    try:
        threads = [
            threading.Thread(target=write, args=a) for a in zip(writers, batches, strict=True)
        ]
        searching = threading.Thread(target=read)
        searching.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        done.set()
        searching.join()
        hits = reader.vector_search(ME, probe, 100, Filters())
        assert {h.id for h in hits} == {w.record.id for b in batches for w in b}
    finally:
        for s in (*writers, reader):
            s.close()
