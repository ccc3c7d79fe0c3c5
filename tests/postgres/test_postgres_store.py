"""PostgreSQL-only behaviour: bad URLs, newer schemas, lost connections, the shared queue."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from memstrata.errors import SchemaVersionError, StoreError, ValidationError
from memstrata.filters import Filters
from memstrata.jobs import Job
from memstrata.scope import Scope
from memstrata.store import open_store
from memstrata.store.fts5 import document_tokens, tokens
from memstrata.store.postgres import PostgresStore
from servers import PgServer
from store.conftest import Maker

NOW = datetime(2026, 1, 1, tzinfo=UTC)
ME = Scope("t1", "u1")


def _job(n: int, user: str = "u1") -> Job:
    return Job(
        id=f"j{n:04d}",
        kind="ingest",
        tenant="t1",
        user=user,
        payload={"n": n},
        created_at=NOW,
        run_after=NOW + timedelta(microseconds=n),
    )


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://nobody@127.0.0.1:1/nothing",
        "postgresql://postgres@/no_such_database?host=/nonexistent-socket-dir",
    ],
)
def test_unreachable_servers_are_a_clear_error(url: str) -> None:
    with pytest.raises(StoreError, match="cannot connect to PostgreSQL"):
        open_store(url)


def test_a_missing_database_is_named(pg_server: PgServer) -> None:
    url = pg_server.admin_url.replace("/postgres?", "/no_such_db?")
    with pytest.raises(StoreError, match="no_such_db"):
        open_store(url)


@pytest.mark.parametrize("option", ["schema=Bad-Name", "pool_max=0", "exact_below=x"])
def test_bad_url_options_are_validation_errors(pg_server: PgServer, option: str) -> None:
    sep = "&" if "?" in pg_server.admin_url else "?"
    with pytest.raises(ValidationError, match=option.split("=")[0]):
        open_store(pg_server.admin_url + sep + option)


def test_a_newer_schema_is_refused_untouched(pg_url: str, pg_server: PgServer) -> None:
    store = open_store(pg_url)
    assert isinstance(store, PostgresStore)
    schema = store.options.schema
    store.close()
    with psycopg.connect(pg_server.admin_url, autocommit=True) as conn:
        conn.execute(f'INSERT INTO "{schema}".schema_migrations (version) VALUES (99)')
        before = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = %s", (schema,)
        ).fetchone()
    with pytest.raises(SchemaVersionError, match="upgrade memstrata"):
        open_store(pg_url)
    with psycopg.connect(pg_server.admin_url, autocommit=True) as conn:
        after = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = %s", (schema,)
        ).fetchone()
    assert before == after


def test_a_connection_lost_mid_transaction_writes_nothing(pg_url: str, pg_server: PgServer) -> None:
    store = open_store(pg_url)
    maker = Maker()
    try:
        with pytest.raises(StoreError, match="lost the connection"), store.transaction() as tx:
            tx.insert([maker.write()])
            pid = tx._c.info.backend_pid  # type: ignore[attr-defined]
            with psycopg.connect(pg_server.admin_url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            tx.insert([maker.write()])
        # The pool replaces the dead connection: the next call works, and finds nothing.
        assert store.count(ME, Filters(include_deleted=True)) == 0
        store.insert([maker.write()])
        assert store.count(ME, Filters()) == 1
    finally:
        store.close()


def test_nul_in_content_is_a_validation_error(pg_url: str) -> None:
    store = open_store(pg_url)
    try:
        with pytest.raises(ValidationError, match="NUL"):
            store.insert([Maker().write(text="a\x00b")])
    finally:
        store.close()


def test_concurrent_claims_never_lease_a_job_twice(pg_url: str) -> None:
    stores = [open_store(pg_url) for _ in range(4)]
    try:
        # Ten users: a claim takes jobs of one user, and none of a user whose jobs another
        # claim holds, so the workers share the users and finish what they hold.
        stores[0].enqueue([_job(n, user=f"u{n % 10}") for n in range(300)])
        claimed: list[list[str]] = [[] for _ in stores]
        held: set[str] = set()
        overlap: list[str] = []
        lock = threading.Lock()

        def drain(i: int) -> None:
            while jobs := stores[i].claim_jobs(
                NOW + timedelta(seconds=1), limit=7, lease_seconds=600
            ):
                users = {j.user for j in jobs}
                with lock:
                    overlap.extend(users & held)
                    held.update(users)
                claimed[i] += [j.id for j in jobs]
                with lock:
                    held.difference_update(users)
                for j in jobs:
                    stores[i].finish_job(j.id, j.lease_token)

        threads = [threading.Thread(target=drain, args=(i,)) for i in range(len(stores))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        every = [j for c in claimed for j in c]
        assert sorted(every) == [f"j{n:04d}" for n in range(300)]  # each exactly once
        assert sum(bool(c) for c in claimed) >= 2  # the work really was shared
        assert overlap == []  # no user's jobs were held by two claims at once
    finally:
        for s in stores:
            s.close()


def test_an_expired_lease_is_claimed_again(pg_url: str) -> None:
    store = open_store(pg_url)
    try:
        store.enqueue([_job(0)])
        first = store.claim_jobs(NOW, limit=5, lease_seconds=30)
        assert [j.attempts for j in first] == [1]
        assert store.claim_jobs(NOW + timedelta(seconds=10), limit=5, lease_seconds=30) == []
        again = store.claim_jobs(NOW + timedelta(seconds=31), limit=5, lease_seconds=30)
        assert [(j.id, j.attempts) for j in again] == [("j0000", 2)]
    finally:
        store.close()


def test_enqueue_wakes_a_listening_worker(pg_url: str) -> None:
    listener = open_store(pg_url)
    writer = open_store(pg_url)
    try:
        assert isinstance(listener, PostgresStore)
        assert listener.wait_for_jobs(0.05) is False  # starts listening, nothing queued
        timer = threading.Timer(0.3, writer.enqueue, args=([_job(2)],))
        timer.start()
        assert listener.wait_for_jobs(10) is True
        timer.join()
    finally:
        listener.close()
        writer.close()


def test_fts5_tokens_match_sqlite_for_punctuated_terms() -> None:
    assert tokens("tea") == ("tea",)
    assert tokens("・") == ()
    assert tokens("東京・大阪") == ("東京", "大阪")
    assert tokens("Café") == ("café",)
    assert document_tokens(["a", " ", "", "b・c"]) == ["a", "b", "c"]


def test_the_hnsw_path_returns_true_neighbours_scored_like_the_exact_path(
    pg_server: PgServer,
) -> None:
    """With ``exact_below=0`` every search goes through pgvector's index; on a small,
    well-separated set its answers and scores must equal the exact path's."""
    import numpy as np

    schema = "t_hnsw_check"
    exact = open_store(pg_server.url(schema))
    maker = Maker()
    try:
        writes = [maker.write(text=f"note {n}") for n in range(60)]
        exact.insert(writes)
        hnsw = open_store(pg_server.url(schema, exact_below=0))
        try:
            for w in writes[:10]:
                query = np.asarray(w.vector, dtype=np.float32)
                want = exact.vector_search(ME, query, 5, Filters())
                got = hnsw.vector_search(ME, query, 5, Filters())
                assert got[0].id == w.record.id
                assert [c.id for c in got] == [c.id for c in want]
                assert [c.score for c in got] == [c.score for c in want]
        finally:
            hnsw.close()
    finally:
        exact.close()
        pg_server.drop(schema)
