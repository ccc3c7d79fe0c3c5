"""A user's purge deletes the API keys bound to that user (issue 10 §6, decision in
``server/keys.py``): such a key names the user (and its name may too), and it acted only as
them. Afterwards it no longer authenticates, ``keys list`` no longer shows it, no byte or
row of the database holds the user id, and service keys and other users' keys still work.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from memstrata import FixedClock, Memory, Scope
from memstrata.server.keys import InMemoryKeyStore, KeyStore, SQLiteKeyStore

from .test_purge_pg_rows import _rows_containing

VICTIM = Scope("acme", "victim-user-7731", session="s")
OTHER = Scope("acme", "bystander-4242", session="s")


def _keys(keys: KeyStore) -> tuple[str, str, str]:
    mine = keys.create("acme", user=VICTIM.user, name="laptop of victim-user-7731").secret
    service = keys.create("acme", role="admin", name="service").secret
    other = keys.create("acme", user=OTHER.user, name="bystander key").secret
    return mine, service, other


def _check_keys(keys: KeyStore, mine: str, service: str, other: str) -> None:
    assert keys.authenticate(mine) is None
    assert keys.authenticate(service) is not None
    found = keys.authenticate(other)
    assert found is not None and found.user == OTHER.user
    assert [k.user for k in keys.list("acme")].count(VICTIM.user) == 0
    assert {k.name for k in keys.list("acme")} == {"service", "bystander key"}


def test_sqlite_purge_deletes_the_users_keys(tmp_path: Path, clock: FixedClock) -> None:
    path = tmp_path / "keys.db"
    mem = Memory(f"sqlite:///{path}", embedder="hashing", clock=clock, background=False)
    keys = SQLiteKeyStore(str(path))
    try:
        secrets = _keys(keys)
        mem.add_message(VICTIM, "user", "hello there")
        mem.add_message(OTHER, "user", "hello too")
        assert keys.authenticate(secrets[0]) is not None
        report = mem.purge(VICTIM.user_scope)  # the library's purge (CLI: memstrata purge)
        assert report.remaining == 0
        _check_keys(keys, *secrets)
    finally:
        keys.close()
        mem.close()
    data = b"".join(
        Path(f"{path}{s}").read_bytes() for s in ("", "-wal") if Path(f"{path}{s}").exists()
    )
    assert b"victim-user-7731" not in data
    assert b"bystander-4242" in data


def test_postgres_purge_deletes_the_users_keys(pg_url: str, clock: FixedClock) -> None:
    from memstrata.server.pg_keys import PostgresKeyStore

    mem = Memory(pg_url, embedder="hashing", clock=clock, background=False)
    keys = PostgresKeyStore(pg_url)
    try:
        secrets = _keys(keys)
        mem.add_message(VICTIM, "user", "hello there")
        assert _rows_containing(mem, {VICTIM.user})
        mem.purge(VICTIM.user_scope)
        assert _rows_containing(mem, {VICTIM.user}) == {}
        assert _rows_containing(mem, {OTHER.user})
        _check_keys(keys, *secrets)
    finally:
        keys.close()
        mem.close()


def test_server_purge_deletes_the_users_keys_on_memory_stores() -> None:
    """``memory://`` keeps keys in process (InMemoryKeyStore), apart from the store: the
    purge route deletes them."""
    from fastapi.testclient import TestClient

    from memstrata.server import create_app
    from memstrata.server.app import Limits

    clock = FixedClock(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))
    mem = Memory("memory://", embedder="hashing", clock=clock, background=False)
    keys = InMemoryKeyStore()
    secrets = _keys(keys)
    client = TestClient(create_app(mem, keys, limits=Limits(rate=0)))
    try:
        h = {"Authorization": f"Bearer {secrets[1]}"}
        mine = {"Authorization": f"Bearer {secrets[0]}"}
        url = f"/v1/users/{VICTIM.user}"
        assert client.post(f"{url}/memories", headers=mine, json={"content": "hi"}).is_success
        r = client.post(f"{url}/purge", headers=h, json={"all_of_user": True})
        assert r.status_code == 200, r.text
        _check_keys(keys, *secrets)
        assert client.get(f"{url}/memories", headers=mine).status_code == 401
    finally:
        client.close()
        mem.close()
