"""What an insert sends to PostgreSQL: a small batch is plain INSERTs in pipeline mode (one
round trip for the records, vectors and postings), a large one COPY; both store the same
rows, and a clash caught only by the unique index (a concurrent writer) is still a
``ValidationError`` that leaves the store usable."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

import memstrata.store.postgres.lexical as pg_lexical
import memstrata.store.postgres.store as pg_store
from memstrata.errors import ValidationError
from memstrata.filters import Filters
from memstrata.scope import Scope
from memstrata.store.postgres import PostgresStore
from servers import PgServer
from store.conftest import Maker

ME = Scope("t1", "u1")


class _Sent:
    """Statements by how they were sent: waiting for their answer, or in a pipeline."""

    def __init__(self) -> None:
        self.waited: list[str] = []
        self.piped: list[str] = []
        self.copies: list[str] = []

    def note(self, cur: Any, query: Any) -> None:
        text = " ".join(str(query).split())[:60]
        (self.piped if cur.connection._pipeline is not None else self.waited).append(text)


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Sent]:
    log = _Sent()
    for name in ("execute", "executemany"):
        original = getattr(psycopg.Cursor, name)

        def wrapped(self: Any, query: Any, *a: Any, _o: Any = original, **k: Any) -> Any:
            log.note(self, query)
            return _o(self, query, *a, **k)

        monkeypatch.setattr(psycopg.Cursor, name, wrapped)
    copy = psycopg.Cursor.copy

    def copied(self: Any, statement: Any, *a: Any, **k: Any) -> Any:
        log.copies.append(" ".join(str(statement).split())[:40])
        return copy(self, statement, *a, **k)

    monkeypatch.setattr(psycopg.Cursor, "copy", copied)
    yield log


def _ids(store: PostgresStore) -> list[str]:
    return sorted(r.id for r in store.list(ME, Filters(), limit=1000))


def test_one_record_is_inserted_in_one_pipelined_round_trip(pg_url: str, sent: _Sent) -> None:
    m = Maker()
    store = PostgresStore(pg_url)
    try:
        store.insert([m.write(m.record("warm the pool and the schema up"))])
        sent.waited.clear(), sent.piped.clear(), sent.copies.clear()
        w = m.write(m.record("the user likes green tea"))
        store.insert([w])
        assert sent.copies == []  # was 3 COPYs (records, vectors, postings)
        # one statement waits (the id clash check with the new seq); was 7
        assert len(sent.waited) == 1, sent.waited
        assert any("INSERT INTO records" in s for s in sent.piped)
        assert any("INSERT INTO vectors" in s for s in sent.piped)
        assert any("INSERT INTO lex_postings" in s for s in sent.piped)
        got = store.get(ME, w.record.id)
        assert got.content.raw == "the user likes green tea"
        assert [c.id for c in store.lexical_search(ME, ["green", "tea"], 5, Filters())] == [
            w.record.id
        ]
        assert store.vector_search(ME, w.vector, 1, Filters())[0].id == w.record.id
    finally:
        store.close()


def test_inserts_and_copy_store_the_same_rows(
    pg_server: PgServer, sent: _Sent, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same batch by INSERTs and (thresholds lowered) by COPY: the records, lexical
    ranking and vector search answer alike."""
    m = Maker()
    writes = [m.write(m.record(f"note {i} about the garden and tea {i % 7}")) for i in range(12)]
    writes.append(m.write(m.record("")))  # no tokens: no postings
    answers = []
    for copy in (False, True):
        if copy:
            monkeypatch.setattr(pg_store, "_COPY_FROM", 1)
            monkeypatch.setattr(pg_lexical, "COPY_FROM", 1)
        store = PostgresStore(pg_server.url())
        try:
            sent.copies.clear()
            store.insert(writes)
            assert len(sent.copies) == (3 if copy else 0)
            recs = store.list(ME, Filters(), limit=1000)
            lex = store.lexical_search(ME, ["tea", "garden", "3"], 10, Filters())
            vec = store.vector_search(ME, writes[5].vector, 5, Filters())
            answers.append((recs, lex, vec))
        finally:
            store.close()
    assert answers[0] == answers[1]
    assert len(answers[0][0]) == len(writes)
    assert answers[0][2][0].id == writes[5].record.id


def test_a_clash_only_the_unique_index_sees_is_a_validation_error(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As when another writer inserts the id between the check and the insert: the error
    comes back at the end of the pipeline, names the fix, and writes nothing."""
    m = Maker()
    store = PostgresStore(pg_url)
    try:
        first = m.write(m.record("the first note"))
        store.insert([first])
        monkeypatch.setattr(pg_store, "_no_clash", lambda clash: None)  # the check misses
        again = m.write(m.record("a second note under the same id", id=first.record.id))
        with pytest.raises(ValidationError, match="inserted by another writer"):
            store.insert([again])
        other = m.write(m.record("a third note"))
        store.insert([other])  # the connection came back usable
        assert _ids(store) == sorted([first.record.id, other.record.id])
        assert store.get(ME, first.record.id).content.raw == "the first note"
    finally:
        store.close()


def _counts(sent: _Sent) -> int:
    return sum("count(*) FROM vectors" in s for s in sent.waited + sent.piped)


def test_a_search_after_an_add_does_not_count_the_users_vectors(pg_url: str, sent: _Sent) -> None:
    """The process's copy lacks only the new rows: their number is bounded by the vseq
    gap, far below ``exact_below``, so no scan of the user's index entries (was one per
    add's dedup search: 1.1 ms of PostgreSQL at 10k vectors)."""
    m = Maker()
    store = PostgresStore(pg_url)
    try:
        writes = [m.write(m.record(f"note {i}")) for i in range(5)]
        store.insert(writes[:3])
        store.vector_search(ME, writes[0].vector, 3, Filters())  # the copy is loaded
        sent.waited.clear(), sent.piped.clear()
        for w in writes[3:]:
            store.insert([w])
            assert store.vector_search(ME, w.vector, 1, Filters())[0].id == w.record.id
        assert _counts(sent) == 0
        assert len(store.vector_search(ME, writes[0].vector, 10, Filters())) == 5
    finally:
        store.close()


def test_growing_past_exact_below_still_switches_to_the_index(
    pg_server: PgServer, sent: _Sent
) -> None:
    """Once the bound reaches ``exact_below`` the vectors are counted, and a user past it
    is searched through their HNSW index, as before."""
    m = Maker()
    schema = "t_" + "bound_" + str(id(sent))[-8:]
    store = PostgresStore(pg_server.url(schema, exact_below=4))
    try:
        writes = [m.write(m.record(f"note {i}")) for i in range(6)]
        store.insert(writes[:2])
        store.vector_search(ME, writes[0].vector, 3, Filters())
        sent.waited.clear(), sent.piped.clear()
        store.insert(writes[2:3])  # 3 < 4: the bound answers
        store.vector_search(ME, writes[2].vector, 3, Filters())
        assert _counts(sent) == 0
        store.insert(writes[3:6])  # 6 >= 4: counted, and past it: the HNSW path
        sent.waited.clear(), sent.piped.clear()
        got = store.vector_search(ME, writes[4].vector, 3, Filters())
        assert _counts(sent) >= 1
        assert any("<=>" in s or "hnsw" in s.lower() for s in sent.waited), sent.waited
        assert got[0].id == writes[4].record.id
    finally:
        store.close()
        pg_server.drop(schema)
