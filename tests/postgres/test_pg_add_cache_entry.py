"""An add's embedding-cache entry rides in the add's own transaction (it was a second
transaction and commit behind the add, 1 ms of client CPU per add; since schema 15 the
add's vector row takes it over when they hold the same vector), and is never lost:
a write that rolls back leaves it for the next one, a full read or ``close`` writes it,
and a purge deletes it like any other entry."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
import pytest

from memstrata.errors import ValidationError
from memstrata.scope import Scope
from memstrata.store.postgres import PostgresStore
from memstrata.store.sqlite.codec import scope_token
from store.conftest import Maker

ME = Scope("t1", "u1")
MODEL = "test"


@pytest.fixture
def transactions(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The statements of each transaction opened, one list per transaction (each
    ``psycopg.Transaction`` begun: a write transaction begins one of its own in a pipeline
    since pg32, with the schema check, not by ``conn.transaction()``)."""
    log: list[list[str]] = []
    opened = psycopg.Transaction.__enter__
    execute = psycopg.Cursor.execute

    def transaction(self: Any, *a: Any, **k: Any) -> Any:
        log.append([])
        return opened(self, *a, **k)

    def executed(self: Any, query: Any, *a: Any, **k: Any) -> Any:
        if log:
            log[-1].append(" ".join(str(query).split())[:50])
        return execute(self, query, *a, **k)

    monkeypatch.setattr(psycopg.Transaction, "__enter__", transaction)
    monkeypatch.setattr(psycopg.Cursor, "execute", executed)
    yield log  # type: ignore[misc]


def _stored(url: str, key: str) -> bool:
    store = PostgresStore(url)  # another process's view: what is committed
    try:
        return key in store.cached_vectors(ME, MODEL, [key])
    finally:
        store.close()


def _rows(url: str, key: str) -> int:
    store = PostgresStore(url)
    try:
        with store._pool.connection() as c:
            row = c.execute(
                "SELECT count(*) AS n FROM embedding_cache WHERE scope_tok = %s AND key = %s",
                (scope_token(ME.tenant, ME.user), key),
            ).fetchone()
            return int(row["n"])
    finally:
        store.close()


def test_an_adds_cache_entry_is_taken_over_in_the_adds_transaction(
    pg_url: str, transactions: list[list[str]]
) -> None:
    """The add's record holds the entry's very vector: its vector row keeps it (``own``,
    schema 15), and the entry is never written as a row of its own."""
    m = Maker()
    store = PostgresStore(pg_url)
    try:
        store.insert([m.write(m.record("warm up"))])
        w = m.write(m.record("the user likes green tea"))
        transactions.clear()
        store.cache_vectors(ME, MODEL, {w.record.content_hash: np.asarray(w.vector)})
        store.insert([w])
        assert len(transactions) == 1, transactions  # was 2: the entry's own, then the add's
        assert not any("INSERT INTO embedding_cache" in s for s in transactions[0])
        assert any("SELECT (SELECT id FROM records" in s for s in transactions[0])
        assert _rows(pg_url, w.record.content_hash) == 0
        assert _stored(pg_url, w.record.content_hash)  # another process finds it
        got = store.cached_vectors(ME, MODEL, [w.record.content_hash])
        assert np.array_equal(got[w.record.content_hash], np.asarray(w.vector, np.float32))
    finally:
        store.close()


def test_a_rolled_back_write_leaves_the_entry_for_the_next(pg_url: str) -> None:
    m = Maker()
    store = PostgresStore(pg_url)
    try:
        first = m.write(m.record("the first note"))
        store.insert([first])
        vec = np.ones(8, np.float32) / np.sqrt(8)
        store.cache_vectors(ME, MODEL, {"k-after-clash": vec})
        with pytest.raises(ValidationError, match="exists already"):
            store.insert([m.write(m.record("again", id=first.record.id))])
        assert not _stored(pg_url, "k-after-clash")  # rolled back with the add
        assert "k-after-clash" in store.cached_vectors(ME, MODEL, ["k-after-clash"])
        store.insert([m.write(m.record("a later note"))])
        assert _stored(pg_url, "k-after-clash")
    finally:
        store.close()


def test_close_and_full_reads_write_deferred_entries(pg_url: str) -> None:
    vec = np.ones(8, np.float32) / np.sqrt(8)
    store = PostgresStore(pg_url)
    try:
        store.cache_vectors(ME, MODEL, {"k-read": vec})
        store.stats(ME)  # a read that waits for everything written behind
        assert _stored(pg_url, "k-read")
        store.cache_vectors(ME, MODEL, {"k-close": vec})
    finally:
        store.close()
    assert _stored(pg_url, "k-close")


def test_a_purge_deletes_a_deferred_entry(pg_url: str) -> None:
    vec = np.ones(8, np.float32) / np.sqrt(8)
    store = PostgresStore(pg_url)
    try:
        store.cache_vectors(ME, MODEL, {"k-purged": vec})
        report = store.purge_user(ME.tenant, ME.user)
        assert report.cache_entries == 1
        assert store.cached_vectors(ME, MODEL, ["k-purged"]) == {}
    finally:
        store.close()
    assert _rows(pg_url, "k-purged") == 0
