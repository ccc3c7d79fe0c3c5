"""A connection PostgreSQL refuses says whether waiting can help. psycopg gives no SQLSTATE
for a failed connection, and until session 27 every one was retryable: a wrong password, an
unknown role or database (``memstrata serve``: 503 ``unavailable`` with ``Retry-After``; a
worker retried it forever) like a server restarting. Now what needs an operator (28P01,
28000, 3D000) is not retryable (HTTP 500 ``store_failed``, ``/readyz`` 503 without
``Retry-After``), while a refused or silent socket and a server out of connections are."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from memstrata import AsyncMemory, Memory, Scope
from memstrata.errors import StoreError
from memstrata.server import create_app
from memstrata.server.app import Limits
from memstrata.server.keys import SQLiteKeyStore
from ops21.conftest import OwnPostgres
from serving import free_port

from .conftest import PASSWORD, ROLE

ME = Scope("acme", "alice", session="s1")


def _url(pg: OwnPostgres, user: str, password: str | None = None, db: str = "postgres") -> str:
    secret = f":{password.replace(' ', '%20')}" if password is not None else ""
    return (
        f"postgresql://{user}{secret}@/{db}?host={pg.socket_dir}&schema=t_{uuid.uuid4().hex[:12]}"
    )


def _admin(pg: OwnPostgres, *statements: str) -> None:
    with psycopg.connect(pg.admin_url, autocommit=True) as conn:
        for s in statements:
            conn.execute(s.encode())


def _cut(pg: OwnPostgres) -> None:
    """End every connection of :data:`ROLE` and wait until each backend has exited (up to
    10 s each). Without the wait (session 31) a call could still take a pooled connection
    whose backend had not yet acted on the signal: its first statement then met "terminating
    connection due to administrator command" (57P01), a cut connection, retryable: 503 where
    the test expected the changed password's 500 (seen once under load;
    :func:`test_a_connection_cut_under_a_call_is_unavailable` shows that race)."""
    with psycopg.connect(pg.admin_url, autocommit=True) as conn:
        ended = conn.execute(
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE usename = %s",
            (ROLE,),
        ).fetchall()
    assert all(row[0] for row in ended), f"a backend of {ROLE} outlived 10 s: {ended}"


def _refused(url: str) -> StoreError:
    with pytest.raises(StoreError) as caught:
        Memory(url, embedder="hashing", background=False)
    return caught.value


@pytest.mark.parametrize(
    ("case", "said", "fix"),
    [
        ("wrong password", "password authentication failed", "the password was refused"),
        ("no password", "no password supplied", "put it in the URL"),
        ("unknown role", 'role "pg27_nobody" does not exist', "CREATE ROLE"),
        ("unknown database", 'database "pg27_nodb" does not exist', "CREATE DATABASE"),
    ],
)
def test_what_an_operator_must_mend_is_not_retryable(
    pw_pg: OwnPostgres, case: str, said: str, fix: str
) -> None:
    url = {
        "wrong password": _url(pw_pg, ROLE, "wrong"),
        "no password": _url(pw_pg, ROLE),
        "unknown role": _url(pw_pg, "pg27_nobody"),
        "unknown database": _url(pw_pg, "postgres", db="pg27_nodb"),
    }[case]
    err = _refused(url)
    assert err.retryable is False, str(err)
    assert said in str(err) and fix in str(err)
    assert "wrong" not in str(err).replace("wrong password", "")  # no password shown


def test_what_may_pass_by_itself_stays_retryable(pw_pg: OwnPostgres, tmp_path: Path) -> None:
    _admin(pw_pg, f"ALTER ROLE {ROLE} CONNECTION LIMIT 0")
    try:  # the server says so (53300) after the password was accepted
        err = _refused(_url(pw_pg, ROLE, PASSWORD))
        assert err.retryable is True and "too many connections for role" in str(err)
    finally:
        _admin(pw_pg, f"ALTER ROLE {ROLE} CONNECTION LIMIT -1")
    refused = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"  # nothing listens
    gone = f"postgresql://postgres@/postgres?host={tmp_path}"  # no server's socket there
    for url in (refused, gone):
        err = _refused(url)
        assert err.retryable is True, str(err)
    Memory(_url(pw_pg, ROLE, PASSWORD), embedder="hashing", background=False).close()


def test_a_server_that_never_answers_is_retryable() -> None:
    from memstrata.store.postgres.connection import refusal, transient

    with socket.socket() as silent:  # accepts the connection, never speaks
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        with pytest.raises(psycopg.OperationalError) as caught:
            psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres", connect_timeout=1)
    assert "timeout" in str(caught.value)
    assert refusal(caught.value) is None and transient(caught.value) is True


def _serve(tmp_path: Path, url: str) -> tuple[AsyncMemory, SQLiteKeyStore, str]:
    keys = SQLiteKeyStore(str(tmp_path / "keys.db"))
    return AsyncMemory(url, embedder="hashing", background=False), keys, keys.create("acme").secret


def _while_serving(
    pw_pg: OwnPostgres, tmp_path: Path, change: str, undo: str, check: Callable[..., None]
) -> None:
    """A server on the password role's store; ``change`` (then every connection of the
    role cut: the next ones meet it), ``check(client, auth)``, then ``undo``."""
    from fastapi.testclient import TestClient

    native, keys, key = _serve(tmp_path, _url(pw_pg, ROLE, PASSWORD))
    app = create_app(native, keys, limits=Limits(rate=0), on_close=native.aclose)
    auth = {"Authorization": f"Bearer {key}"}
    try:
        with TestClient(app) as client:
            r = client.post("/v1/users/alice/memories", headers=auth, json={"content": "heron"})
            assert r.status_code == 201, r.text
            _admin(pw_pg, change)
            _cut(pw_pg)
            try:
                check(client, auth)
            finally:
                _admin(pw_pg, undo)
    finally:
        keys.close()


def test_a_password_changed_under_a_server_is_store_failed(
    pw_pg: OwnPostgres, tmp_path: Path
) -> None:
    def check(client: object, auth: dict[str, str]) -> None:
        r = client.post("/v1/users/alice/search", headers=auth, json={"query": "heron"})  # type: ignore[attr-defined]
        assert r.status_code == 500, r.text  # before: 503 unavailable, Retry-After: 5
        assert r.json()["error"]["code"] == "store_failed"
        assert "password authentication failed" in r.text and "retry-after" not in r.headers
        ready = client.get("/readyz")  # type: ignore[attr-defined]
        assert ready.status_code == 503 and "retry-after" not in ready.headers, ready.text
        assert "the password was refused" in ready.text

    _while_serving(
        pw_pg,
        tmp_path,
        f"ALTER ROLE {ROLE} PASSWORD 'changed by the operator'",
        f"ALTER ROLE {ROLE} PASSWORD '{PASSWORD}'",
        check,
    )


def test_a_connection_cut_under_a_call_is_unavailable(pw_pg: OwnPostgres, tmp_path: Path) -> None:
    """The race behind the 503 that the password test once saw under load, made certain:
    the role's backends are stopped (SIGSTOP) before they are told to end, so the call takes
    a pooled connection that looks alive, sends its statement, and meets "terminating
    connection due to administrator command" (57P01) once they run again. Its connection was
    cut, nothing says an operator must act (the password is unchanged here, and a retry
    succeeds): 503 ``unavailable`` with ``Retry-After`` is the right answer, so the password
    test must wait for the backends to end (:func:`_cut`) rather than accept a 503."""
    import os
    import signal
    import threading
    import time

    from fastapi.testclient import TestClient

    native, keys, key = _serve(tmp_path, _url(pw_pg, ROLE, PASSWORD))
    app = create_app(native, keys, limits=Limits(rate=0), on_close=native.aclose)
    auth = {"Authorization": f"Bearer {key}"}
    try:
        with TestClient(app) as client:
            r = client.post("/v1/users/alice/memories", headers=auth, json={"content": "heron"})
            assert r.status_code == 201, r.text
            with psycopg.connect(pw_pg.admin_url, autocommit=True) as admin:
                pids = [
                    row[0]
                    for row in admin.execute(
                        "SELECT pid FROM pg_stat_activity WHERE usename = %s", (ROLE,)
                    ).fetchall()
                ]
                assert pids
                for pid in pids:
                    os.kill(pid, signal.SIGSTOP)
                try:
                    admin.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                        (ROLE,),
                    )
                    answers: list[object] = []
                    call = threading.Thread(
                        target=lambda: answers.append(
                            client.post(
                                "/v1/users/alice/search", headers=auth, json={"query": "heron"}
                            )
                        )
                    )
                    call.start()
                    time.sleep(1.0)  # the statement is sent to a stopped backend
                finally:
                    for pid in pids:
                        os.kill(pid, signal.SIGCONT)
                call.join(30)
            (cut,) = answers
            assert cut.status_code == 503, cut.text  # type: ignore[attr-defined]
            assert cut.json()["error"]["code"] == "unavailable"  # type: ignore[attr-defined]
            assert int(cut.headers["retry-after"]) > 0  # type: ignore[attr-defined]
            assert "terminating connection" in cut.text  # type: ignore[attr-defined]
            again = client.post("/v1/users/alice/search", headers=auth, json={"query": "heron"})
            assert again.status_code == 200, again.text  # the retry it was told to make
    finally:
        keys.close()


def test_a_role_out_of_connections_under_a_server_is_unavailable(
    pw_pg: OwnPostgres, tmp_path: Path
) -> None:
    def check(client: object, auth: dict[str, str]) -> None:
        r = client.post("/v1/users/alice/search", headers=auth, json={"query": "heron"})  # type: ignore[attr-defined]
        assert r.status_code == 503, r.text
        assert r.json()["error"]["code"] == "unavailable" and int(r.headers["retry-after"]) > 0
        ready = client.get("/readyz")  # type: ignore[attr-defined]
        assert ready.status_code == 503 and int(ready.headers["retry-after"]) > 0, ready.text

    _while_serving(
        pw_pg,
        tmp_path,
        f"ALTER ROLE {ROLE} CONNECTION LIMIT 0",
        f"ALTER ROLE {ROLE} CONNECTION LIMIT -1",
        check,
    )


def test_the_worker_ends_on_a_password_changed_under_it(pw_pg: OwnPostgres) -> None:
    """``memstrata worker``'s loop retries a retryable failure forever (it waits out an
    outage): a changed password kept it warning every 30 s, never ending."""
    import time

    from memstrata.worker import JobRunner

    mem = Memory(_url(pw_pg, ROLE, PASSWORD), embedder="hashing", background=False)
    try:
        mem.add_message(ME, "user", "I moved to Lisbon in May")  # a job for the worker
        runner = JobRunner(mem.store, mem.layers.handlers(), mem.clock)
        _admin(pw_pg, f"ALTER ROLE {ROLE} PASSWORD 'changed by the operator'")
        _cut(pw_pg)
        deadline = time.monotonic() + 30
        try:
            with pytest.raises(StoreError, match="password authentication failed") as caught:
                runner.run_forever(poll_seconds=0.05, stop=lambda: time.monotonic() > deadline)
            assert caught.value.retryable is False
        finally:
            _admin(pw_pg, f"ALTER ROLE {ROLE} PASSWORD '{PASSWORD}'")
    finally:
        mem.close()


def test_a_database_without_pgvector_is_not_retryable(pw_pg: OwnPostgres) -> None:
    """A database where pgvector is installed but not enabled, and the role may not enable
    it (not a superuser: vector is not a trusted extension): an operator must run CREATE
    EXTENSION. The server-side case (no pgvector at all) takes the same path."""
    with psycopg.connect(pw_pg.admin_url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = 'pg27_novec'").fetchone():
            conn.execute("CREATE DATABASE pg27_novec")
    err = _refused(_url(pw_pg, ROLE, PASSWORD, db="pg27_novec"))
    assert err.retryable is False
    assert "CREATE EXTENSION vector" in str(err) and "may not enable it" in str(err)


def test_the_api_keys_table_says_the_same(pw_pg: OwnPostgres) -> None:
    """``memstrata serve --keys postgresql://...``: its own connection, the same answer (a
    refused socket was not retryable there, a wrong password said only "check the URL")."""
    from memstrata.server.pg_keys import PostgresKeyStore

    with pytest.raises(StoreError, match="the password was refused") as caught:
        PostgresKeyStore(_url(pw_pg, ROLE, "wrong"))
    assert caught.value.retryable is False and "for the API keys" in str(caught.value)
    with pytest.raises(StoreError) as caught:
        PostgresKeyStore(f"postgresql://postgres@127.0.0.1:{free_port()}/postgres")
    assert caught.value.retryable is True
