"""A ``statement_timeout`` shorter than opening a PostgreSQL store takes fails the open at
once, with an error that names it and says where to raise it (pg34).

audit33: ``Memory("postgresql://...?options=-c%20statement_timeout%3D1")`` failed after 15 s
with "pool initialization incomplete after 15 sec" when the pool's set-up statements were
cancelled (psycopg_pool retried them until its wait ran out), and with "could not do this
call now ...: retry in a few seconds" (retryable) when the schema's check was: neither named
the timeout's setting nor the fix. Real server, real cancellations; before the fix the
first test fails (a retryable error naming no setting), and the third whenever psycopg_pool's
retries of a cancelled set-up were all cancelled (15 s)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest

from memstrata import Memory, Scope
from memstrata.errors import StoreError
from memstrata.store.postgres.reach import fill_pool
from servers import PgServer


@pytest.fixture
def made(pg_server: PgServer) -> Iterator[tuple[PgServer, str]]:
    """A store made (schema at this version), then closed: its schema's name."""
    schema = "t_" + uuid.uuid4().hex[:16]
    Memory(pg_server.url(schema), embedder="hashing", background=False).close()
    yield pg_server, schema
    pg_server.drop(schema)


def _says_what_to_do(exc: StoreError, setting: str) -> None:
    text = str(exc)
    assert not exc.retryable, text
    assert "SQLSTATE 57014" in text and f"statement_timeout is {setting}" in text, text
    assert "options=-c statement_timeout=" in text and "ALTER ROLE" in text, text


def test_a_schema_check_cancelled_by_the_timeout(made: tuple[PgServer, str]) -> None:
    """The schema's version read waits for a lock another session holds (a dump, an
    operator's ``LOCK``): cancelled by the URL's 300 ms timeout, the open says so."""
    server, schema = made
    with psycopg.connect(server.admin_url) as holder:
        holder.execute(f'LOCK TABLE "{schema}".schema_migrations IN ACCESS EXCLUSIVE MODE')
        start = time.monotonic()
        with pytest.raises(StoreError) as caught:
            Memory(server.url(schema, options="-c statement_timeout=300"), embedder="hashing")
        took = time.monotonic() - start
        holder.rollback()
    server.schemas.remove(schema)  # one drop is enough (the fixture's)
    _says_what_to_do(caught.value, "300ms")
    assert "the schema's check or upgrade" in str(caught.value)
    assert took < 10, took


def test_a_pool_whose_set_up_is_cancelled_fails_at_once(pg_server: PgServer) -> None:
    """``fill_pool`` raises the first cancelled set-up, not psycopg_pool's 15 s wait."""
    from psycopg_pool import ConnectionPool

    failed: list[BaseException] = []

    def configure(conn: psycopg.Connection) -> None:
        try:
            conn.execute("SELECT pg_sleep(1)")
        except psycopg.errors.QueryCanceled as exc:
            failed.append(exc)
            raise

    conninfo = pg_server.admin_url + "&options=-c%20statement_timeout%3D50"
    pool = ConnectionPool(
        conninfo, min_size=1, open=False, configure=configure, kwargs={"autocommit": True}
    )
    start = time.monotonic()
    try:
        with pytest.raises(psycopg.errors.QueryCanceled):
            fill_pool(pool, failed, 15)
    finally:
        pool.close()
    assert time.monotonic() - start < 5


def test_one_millisecond_in_the_url(made: tuple[PgServer, str]) -> None:
    """audit33's URL, opened 12 times on a made store (at 1 ms some opens get through
    whole, some are cancelled in the schema's check, some in the pool's set-up, which
    psycopg_pool retried: when every retry was cancelled too, as on audit33's loaded
    machine, the open failed after 15 s; on a quiet one the retries got through): every
    failure is fast and says what to do."""
    server, schema = made
    url = server.url(schema, options="-c statement_timeout=1")
    server.schemas.remove(schema)
    failures: list[tuple[float, str]] = []
    for _ in range(12):
        start = time.monotonic()
        try:
            Memory(url, embedder="hashing", background=False).close()
        except StoreError as exc:
            failures.append((time.monotonic() - start, str(exc)))
            _says_what_to_do(exc, "1ms")
    assert max((took for took, _ in failures), default=0) < 5, failures


def test_a_call_cancelled_by_the_timeout_names_it(made: tuple[PgServer, str]) -> None:
    """An open store's call cancelled by the timeout (it waited for a lock) stays retryable
    and says, if it happens again and again, which setting to raise (before: "retry in a
    few seconds" only)."""
    server, schema = made
    with Memory(server.url(schema, options="-c statement_timeout=300"), embedder="hashing") as mem:
        server.schemas.remove(schema)
        with psycopg.connect(server.admin_url) as holder:
            holder.execute(f'LOCK TABLE "{schema}".records IN ACCESS EXCLUSIVE MODE')
            with pytest.raises(StoreError) as caught:
                mem.search(Scope("t", "u"), "anything")
            holder.rollback()
    text = str(caught.value)
    assert caught.value.retryable, text
    assert "SQLSTATE 57014" in text and "statement_timeout" in text, text
    assert "options=-c statement_timeout=" in text, text
