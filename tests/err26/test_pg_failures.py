"""A PostgreSQL store's failure says whether retrying can help: a stopped server is
transient (``retryable``; HTTP 503 ``unavailable`` with ``Retry-After``), a trigger's
refusal or a schema changed by hand is not (HTTP 500 ``store_failed``, no ``Retry-After``).
Before session 26 every one of them was the same ``StoreError`` and the same 503 with
``Retry-After: 5``; a trigger's refusal said only "... failed: refused by e26"."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient

from memstrata import AsyncMemory, Memory, Scope
from memstrata.errors import StoreError
from memstrata.server import create_app
from memstrata.server.app import Limits
from memstrata.server.keys import SQLiteKeyStore
from memstrata.store.postgres.connection import parse_url

from .conftest import OwnPostgres
from .test_sqlite_failures import _store_failed

ME = Scope("acme", "alice", session="s1")


@contextmanager
def served(tmp_path: Path, url: str) -> Iterator[tuple[TestClient, dict[str, str]]]:
    """A server (in-process) on the store ``url``; its keys in a SQLite file of their own."""
    keys = SQLiteKeyStore(str(tmp_path / "keys.db"))
    key = keys.create("acme").secret
    native = AsyncMemory(url, embedder="hashing", background=False)
    app = create_app(native, keys, limits=Limits(rate=0), on_close=native.aclose)
    with TestClient(app) as client:
        yield client, {"Authorization": f"Bearer {key}"}


def _sql(url: str, *statements: str) -> None:
    """Statements run by hand (an operator, another program) in the store's schema."""
    options = parse_url(url)
    with psycopg.connect(options.conninfo, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{options.schema}", public')
        for statement in statements:
            conn.execute(statement)


def test_a_stopped_server_is_worth_retrying(own_pg: OwnPostgres, tmp_path: Path) -> None:
    url = own_pg.url()
    mem = Memory(url, embedder="hashing", background=False)
    rec = mem.add(ME, "a heron by the lake")

    def while_down(client: TestClient, auth: dict[str, str]) -> None:
        for call in (
            lambda: mem.search(ME, "heron"),
            lambda: mem.get(ME, rec.id),
            lambda: mem.add(ME, "an egret", dedup=False),
        ):
            with pytest.raises(StoreError) as caught:
                call()
            assert caught.value.retryable is True, str(caught.value)
        r = client.post("/v1/users/alice/search", headers=auth, json={"query": "heron"})
        assert r.status_code == 503, r.text
        assert int(r.headers["retry-after"]) > 0
        assert r.json()["error"]["code"] == "unavailable"

    async def main(client: TestClient, auth: dict[str, str]) -> None:
        async with AsyncMemory(url, embedder="hashing", background=False) as amem:
            assert await amem.search(ME, "heron")  # opened before the outage
            own_pg.stop("fast")
            try:
                with pytest.raises(StoreError) as caught:
                    await amem.search(ME, "heron")
                assert caught.value.retryable is True, str(caught.value)
                while_down(client, auth)
            finally:
                own_pg.start()

    try:
        with served(tmp_path, url) as (client, auth):
            assert client.get("/v1/users/alice/memories", headers=auth).status_code == 200
            asyncio.run(main(client, auth))
    finally:
        mem.close()


def test_a_trigger_refusal_is_not_worth_retrying(pg_url: str, tmp_path: Path) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        mem.add(ME, "a heron by the lake")
    _sql(
        pg_url,
        "CREATE FUNCTION e26_refuse() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'refused by e26'; END $$",
        "CREATE TRIGGER e26_refuse BEFORE INSERT ON records "
        "FOR EACH ROW EXECUTE FUNCTION e26_refuse()",
    )
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        with pytest.raises(StoreError, match="refused by e26") as caught:
            mem.add(ME, "an egret", dedup=False)
        assert caught.value.retryable is False
        assert "trigger" in str(caught.value)
    with served(tmp_path, pg_url) as (client, auth):
        r = client.post("/v1/users/alice/memories", headers=auth, json={"content": "egret"})
        assert "refused by e26" in _store_failed(r)


def test_a_schema_changed_by_hand_is_not_worth_retrying(pg_url: str, tmp_path: Path) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        mem.add(ME, "a heron by the lake")
        _sql(pg_url, "ALTER TABLE lex_postings RENAME TO e26_gone")
        with pytest.raises(StoreError, match="schema") as caught:
            mem.search(ME, "heron")
        assert caught.value.retryable is False
        assert isinstance(caught.value.__cause__, psycopg.errors.UndefinedTable)
    with served(tmp_path, pg_url) as (client, auth):
        r = client.post("/v1/users/alice/search", headers=auth, json={"query": "heron"})
        assert "schema" in _store_failed(r)
