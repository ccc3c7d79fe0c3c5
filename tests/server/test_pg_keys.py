"""API keys on PostgreSQL: one table shared by every server process (migration 5)."""

from __future__ import annotations

import json

import psycopg
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from memstrata import Memory
from memstrata.cli.app import app as cli_app
from memstrata.errors import NotFoundError, ValidationError
from memstrata.server import create_app
from memstrata.server.app import Limits
from memstrata.server.keys import Role, hash_key, open_key_store
from memstrata.server.pg_keys import PostgresKeyStore
from memstrata.store.postgres.connection import parse_url


def test_keys_live_in_the_stores_schema_hashed(pg_url: str) -> None:
    store = open_key_store(pg_url)
    assert isinstance(store, PostgresKeyStore)
    a = store.create("acme", role="admin", name="ops")
    b = store.create("globex", user="bob", roles=["editor"])
    found = store.authenticate(a.secret)
    assert found is not None and found.tenant == "acme" and found.role is Role.ADMIN
    bound = store.authenticate(b.secret)
    assert bound is not None and bound.user == "bob" and bound.roles == {"editor"}
    assert store.authenticate(a.secret[:-1] + ("A" if a.secret[-1] != "A" else "B")) is None
    assert store.authenticate("ms_x") is None
    assert [k.tenant for k in store.list()] == ["acme", "globex"]
    assert [k.id for k in store.list("globex")] == [b.key.id]
    with pytest.raises(NotFoundError):
        store.revoke("000000000000")
    with pytest.raises(ValidationError):
        store.create("acme", role="root")
    opts = parse_url(pg_url)
    with psycopg.connect(opts.conninfo) as conn:
        rows = conn.execute(
            f'SELECT key_hash, tenant FROM "{opts.schema}".api_keys ORDER BY tenant'
        ).fetchall()
        version = conn.execute(
            f'SELECT max(version) FROM "{opts.schema}".schema_migrations'
        ).fetchone()
    assert rows == [(hash_key(a.secret), "acme"), (hash_key(b.secret), "globex")]
    assert version is not None and version[0] >= 5
    store.close()


def test_a_revocation_is_seen_by_another_process_at_its_next_request(pg_url: str) -> None:
    """Two key stores on one database stand for two server processes: no cache in between."""
    first, second = open_key_store(pg_url), open_key_store(pg_url)
    new = first.create("acme")
    assert second.authenticate(new.secret) is not None
    first.revoke(new.key.id)
    assert second.authenticate(new.secret) is None
    first.close()
    second.close()


def test_keys_cli_on_postgresql(pg_url: str) -> None:
    runner = CliRunner()
    db = ["--db", pg_url]
    out = runner.invoke(
        cli_app,
        [
            *db,
            "keys",
            "create",
            "--tenant",
            "acme",
            "--for-user",
            "bob",
            "--access-role",
            "editor",
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    created = json.loads(out.output)
    assert created["user"] == "bob" and created["roles"] == ["editor"]
    listed = json.loads(runner.invoke(cli_app, [*db, "keys", "list", "--json"]).output)
    assert [(k["id"], k["tenant"], k["user"]) for k in listed] == [(created["id"], "acme", "bob")]
    store = open_key_store(pg_url)
    assert store.authenticate(created["key"]) is not None
    rev = runner.invoke(cli_app, [*db, "keys", "revoke", created["id"], "--json"])
    assert rev.exit_code == 0 and json.loads(rev.output)["revoked_at"]
    assert store.authenticate(created["key"]) is None
    store.close()


def test_the_http_api_on_postgresql_authenticates_from_the_shared_table(pg_url: str) -> None:
    mem = Memory(pg_url, embedder="hashing", background=False)
    keys = open_key_store(pg_url)
    app = create_app(mem, keys, limits=Limits(rate=0))
    key = keys.create("acme").secret
    with TestClient(app) as client:
        h = {"Authorization": f"Bearer {key}"}
        r = client.post("/v1/users/alice/memories", json={"content": "likes tea"}, headers=h)
        assert r.status_code == 201, r.text
        other = open_key_store(pg_url)  # e.g. `memstrata keys revoke` in another process
        other.revoke(key.split("_")[1])
        other.close()
        r = client.get("/v1/users/alice/memories", headers=h)
        assert r.status_code == 401 and "revoked" in r.json()["error"]["message"]
    keys.close()
    mem.close()
