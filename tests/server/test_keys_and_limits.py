"""API keys (hashed, revocable, tenant-bound) and the per-key rate limit."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from memstrata import Memory
from memstrata.cli.app import app as cli_app
from memstrata.errors import NotFoundError, ValidationError
from memstrata.server import create_app
from memstrata.server.app import Limits
from memstrata.server.keys import (
    InMemoryKeyStore,
    Role,
    SQLiteKeyStore,
    hash_key,
    open_key_store,
)
from memstrata.server.limits import RateLimiter


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_keys_authenticate_revoke_and_list(tmp_path: Path, kind: str) -> None:
    store = SQLiteKeyStore(str(tmp_path / "k.db")) if kind == "sqlite" else InMemoryKeyStore()
    a = store.create("acme", role="admin", name="ops")
    b = store.create("globex")
    assert a.secret != b.secret and a.secret.startswith("ms_")
    found = store.authenticate(a.secret)
    assert found is not None and found.tenant == "acme" and found.role is Role.ADMIN
    assert store.authenticate(a.secret[:-1] + ("A" if a.secret[-1] != "A" else "B")) is None
    assert store.authenticate("") is None and store.authenticate("ms_x") is None
    assert [k.tenant for k in store.list()] == ["acme", "globex"]
    assert [k.id for k in store.list("globex")] == [b.key.id]
    revoked = store.revoke(a.key.id)
    assert revoked.revoked_at is not None and store.authenticate(a.secret) is None
    assert store.revoke(a.key.id).revoked_at == revoked.revoked_at  # revoking twice is a no-op
    with pytest.raises(NotFoundError):
        store.revoke("000000000000")
    with pytest.raises(ValidationError):
        store.create("acme", role="root")
    with pytest.raises(ValidationError):
        store.create("   ")
    store.close()


def test_only_the_hash_is_stored_beside_the_memory(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    mem = Memory(f"sqlite:///{db}", embedder="hashing", background=False)
    store = open_key_store(f"sqlite:///{db}")
    new = store.create("acme")
    rows = sqlite3.connect(db).execute("SELECT key_hash, tenant FROM api_keys").fetchall()
    assert rows == [(hash_key(new.secret), "acme")]
    assert new.secret.encode() not in db.read_bytes()
    store.close()
    mem.close()
    with pytest.raises(ValidationError):
        open_key_store("redis://localhost/0")


def test_keys_cli_create_list_revoke(tmp_path: Path) -> None:
    runner = CliRunner()
    db = ["--db", f"sqlite:///{tmp_path / 'cli.db'}"]
    out = runner.invoke(
        cli_app, [*db, "keys", "create", "--tenant", "acme", "--role", "admin", "--json"]
    )
    assert out.exit_code == 0, out.output
    import json

    created = json.loads(out.output)
    listed = json.loads(runner.invoke(cli_app, [*db, "keys", "list", "--json"]).output)
    assert [(k["id"], k["tenant"], k["role"]) for k in listed] == [(created["id"], "acme", "admin")]
    assert "key" not in listed[0]
    rev = runner.invoke(cli_app, [*db, "keys", "revoke", created["id"], "--json"])
    assert rev.exit_code == 0 and json.loads(rev.output)["revoked_at"]
    bad = runner.invoke(cli_app, [*db, "keys", "create", "--tenant", "acme", "--role", "god"])
    assert bad.exit_code == 2 and "role" in bad.output


def test_token_bucket_refills_at_the_rate() -> None:
    now = [0.0]
    limiter = RateLimiter(rate=2.0, burst=3, clock=lambda: now[0])
    assert [limiter.acquire("k") for _ in range(3)] == [0.0, 0.0, 0.0]
    wait = limiter.acquire("k")
    assert wait == pytest.approx(0.5)
    assert limiter.acquire("other") == 0.0  # per key
    now[0] += 0.5
    assert limiter.acquire("k") == 0.0
    assert RateLimiter(rate=0, burst=1).acquire("k") == 0.0


def test_rate_limit_is_429_with_retry_after(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    mem = Memory(f"sqlite:///{db}", embedder="hashing", background=False)
    keys = SQLiteKeyStore(str(db))
    secret = keys.create("acme").secret
    other = keys.create("acme").secret
    client = TestClient(
        create_app(mem, keys, limits=Limits(rate=1e-6, burst=2)), raise_server_exceptions=False
    )
    h = {"Authorization": f"Bearer {secret}"}
    codes = [client.get("/v1/whoami", headers=h).status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    r = client.get("/v1/whoami", headers=h)
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
    assert "rate limit" in r.json()["error"]["message"]
    assert client.get("/v1/whoami", headers={"Authorization": f"Bearer {other}"}).status_code == 200
    keys.close()
    mem.close()


def test_a_key_table_from_before_user_bound_keys_gains_the_columns(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.execute(
        "CREATE TABLE api_keys (id TEXT PRIMARY KEY, key_hash TEXT NOT NULL UNIQUE, "
        "tenant TEXT NOT NULL, role TEXT NOT NULL, name TEXT NOT NULL DEFAULT '', "
        "created_at TEXT NOT NULL, revoked_at TEXT)"
    )
    conn.execute(
        "INSERT INTO api_keys VALUES ('0123456789ab', ?, 'acme', 'member', '', "
        "'2026-01-01T00:00:00+00:00', NULL)",
        (hash_key("ms_0123456789ab_" + "a" * 43),),
    )
    conn.commit()
    conn.close()
    store = SQLiteKeyStore(str(db))
    old = store.authenticate("ms_0123456789ab_" + "a" * 43)
    assert old is not None and old.user is None and old.roles == frozenset()
    bound = store.create("acme", user="bob", roles=["editor"])
    found = store.authenticate(bound.secret)
    assert found is not None and found.user == "bob" and found.roles == {"editor"}
    store.close()
