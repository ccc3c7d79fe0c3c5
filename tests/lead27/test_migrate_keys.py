"""``memstrata migrate`` copies the server's API keys with the memory.

Before session 27 a migration left the ``api_keys`` table behind (documented: "create new
ones on the target"): every client of a server moved from SQLite to PostgreSQL was locked
out, and a revoked key's revocation was not carried anywhere. Now a key made on the source
authenticates on the target, a revoked one stays revoked, a user's purge on the target
deletes the keys bound to them, and the verification compares the keys one by one.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata import Memory, Scope
from memstrata.cli.app import app
from memstrata.errors import StoreError
from memstrata.server.keys import NewKey, open_key_store
from memstrata.store.migrate import copy_store, verify_stores
from memstrata.store.url import open_store

ALICE = Scope("acme", "alice")


def _source(tmp_path: Path) -> tuple[str, dict[str, NewKey]]:
    url = f"sqlite:///{tmp_path / 'src.db'}"
    with Memory(url, embedder="hashing", background=False) as mem:
        mem.add(ALICE, "alice keeps bees")
    keys = open_key_store(url)
    try:
        made = {
            "service": keys.create("acme", role="admin", name="ops"),
            "alice": keys.create("acme", user="alice", roles=["family"], name="alice's phone"),
            "revoked": keys.create("globex", name="old laptop"),
            "zh": keys.create("示例公司", user="张伟", name="张伟的钥匙"),
        }
        keys.revoke(made["revoked"].key.id)
    finally:
        keys.close()
    return url, made


def _target(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'dst.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_keys_authenticate_on_the_target_as_on_the_source(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    src, made = _source(tmp_path)
    dst = _target(kind, tmp_path, request)
    report = copy_store(src, dst)
    assert report.ok, report.mismatches
    assert (report.counts["keys"].source, report.counts["keys"].copied) == (4, 4)
    keys = open_key_store(dst)
    try:
        for name in ("service", "alice", "zh"):
            got = keys.authenticate(made[name].secret)
            assert got == made[name].key, name
        assert keys.authenticate(made["revoked"].secret) is None
        listed = {k.id: k for k in keys.list()}
        assert listed[made["revoked"].key.id].revoked_at is not None
        assert listed[made["alice"].key.id].roles == frozenset({"family"})
    finally:
        keys.close()
    again = copy_store(src, dst, resume=True)  # nothing twice
    assert again.ok and again.counts["keys"].copied == 0


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_purge_on_the_target_deletes_the_keys_bound_to_the_user(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    """The target was never opened by a key store: the load registers the table for
    purges itself (store/user_tables.py), or alice's key would outlive her purge."""
    src, made = _source(tmp_path)
    dst = _target(kind, tmp_path, request)
    assert copy_store(src, dst).ok
    with Memory(dst, embedder="hashing", background=False) as mem:
        mem.purge(ALICE.user_scope)
    keys = open_key_store(dst)
    try:
        assert keys.authenticate(made["alice"].secret) is None
        assert keys.authenticate(made["service"].secret) is not None
    finally:
        keys.close()


def test_postgresql_to_sqlite_carries_the_keys(tmp_path: Path, pg_url: str) -> None:
    src, made = _source(tmp_path)
    assert copy_store(src, pg_url).ok
    back = f"sqlite:///{tmp_path / 'back.db'}"
    report = copy_store(pg_url, back)
    assert report.ok and report.counts["keys"].copied == 4
    keys = open_key_store(back)
    try:
        assert keys.authenticate(made["zh"].secret) == made["zh"].key
    finally:
        keys.close()


def test_a_changed_key_on_the_target_is_named(tmp_path: Path) -> None:
    src, made = _source(tmp_path)
    dst_file = tmp_path / "dst.db"
    assert copy_store(src, f"sqlite:///{dst_file}").ok
    conn = sqlite3.connect(dst_file)
    conn.execute("UPDATE api_keys SET role = 'admin' WHERE id = ?", (made["alice"].key.id,))
    conn.commit()
    conn.close()
    report = verify_stores(src, f"sqlite:///{dst_file}")
    assert not report.ok
    assert [(m.kind, m.item) for m in report.mismatches] == [("keys", made["alice"].key.id)]


def test_a_target_holding_keys_is_refused_untouched(tmp_path: Path) -> None:
    src, _ = _source(tmp_path)
    dst = f"sqlite:///{tmp_path / 'dst.db'}"
    keys = open_key_store(dst)
    try:
        keys.create("acme", name="made on the target")
    finally:
        keys.close()
    with pytest.raises(StoreError, match="already holds API keys"):
        copy_store(src, dst)
    store = open_store(dst)
    try:
        assert sum(len(b) for b in store.dump_records(100)) == 0  # type: ignore[attr-defined]
    finally:
        store.close()


def test_memory_target_keeps_the_rows_and_a_purge_deletes_the_users(tmp_path: Path) -> None:
    src, made = _source(tmp_path)
    target = open_store("memory://")
    try:
        assert copy_store(src, target).ok
        target.purge_user("acme", "alice")
        left = {k.id for b in target.dump_keys(100) for k in b}  # type: ignore[attr-defined]
        assert made["alice"].key.id not in left and made["service"].key.id in left
    finally:
        target.close()


def test_the_cli_counts_the_keys(tmp_path: Path) -> None:
    src, _ = _source(tmp_path)
    out = CliRunner().invoke(
        app, ["--db", src, "migrate", "--to", f"sqlite:///{tmp_path / 'cli.db'}", "--json"]
    )
    assert out.exit_code == 0, out.output
    counts = json.loads(out.output[out.output.index("{") :])["counts"]
    assert counts["keys"] == {"source": 4, "target": 4, "copied": 4, "mismatched": 0}
