"""Opening a store made before the index of readers (SQLite schema 15, PostgreSQL step 19)
fills the index from what the store holds: every record's current row, every earlier
version (deltas decoded) and every set_access event (one of a record purged since
included); a purge then works from it. The old store is this code's store with what the
step adds taken away (SQLite: the table and its index; PostgreSQL: the table, its trigger,
the audit log's two indexes) and the
version set back: the step must rebuild every row from the data alone."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memstrata import Memory, Scope
from memstrata.errors import NotFoundError

from .scan import pg_scan, sqlite_scan

BOB = Scope("acme", "bob")
ERIN = Scope("acme", "erin")


def _fill(mem: Memory) -> tuple[str, str]:
    past = mem.add(BOB, "bob's note once shared with carol")
    mem.set_access(BOB, past.id, visibility="shared", allowed_users=["carol", "dave"])
    mem.set_access(BOB, past.id, allowed_users=["dave"])  # carol in an earlier version only
    now = mem.add(ERIN, "erin's note shared with carol")
    mem.set_access(ERIN, now.id, visibility="shared", allowed_users=["carol"])
    gone = mem.add(BOB, "bob's note purged, its event stays")
    mem.set_access(BOB, gone.id, visibility="shared", allowed_users=["carol"])
    mem.purge(BOB, [gone.id])
    mem.add(Scope("acme", "carol"), "carol's own note")
    return past.id, now.id


def _after(mem: Memory, past: str, now: str) -> None:
    assert mem.purge(Scope("acme", "carol")).remaining == 0
    assert all("carol" not in v.access.allowed_users for v in mem.history(BOB, past))
    with pytest.raises(NotFoundError):
        mem.get(ERIN.as_caller("carol"), now)
    events = mem.audit.query("acme", action="set_access")
    assert all("carol" not in e.details["allowed_users"] for e in events)
    assert len(events) == 4


_SQLITE_UNDO = ["DROP TABLE rr", "PRAGMA user_version = 15"]


def test_sqlite_store_of_schema_15(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        past, now = _fill(mem)
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        index, found = sqlite_scan(conn)
        assert index == found and ("acme", "carol", "bob", past) in found
        for sql in _SQLITE_UNDO:
            conn.execute(sql)
    finally:
        conn.close()
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        conn = sqlite3.connect(db)
        try:
            assert conn.execute("PRAGMA user_version").fetchone()[0] >= 16
            assert sqlite_scan(conn) == (found, found)  # filled: every row again
        finally:
            conn.close()
        _after(mem, past, now)


_PG_UNDO = [
    "DROP INDEX IF EXISTS records_shared_wide",  # step 22 (caller28; step 26 drops it)
    "DROP TRIGGER record_readers_insert ON records",
    "DROP TRIGGER record_readers_update ON records",
    "DROP FUNCTION record_readers_add()",
    "DROP TABLE record_readers",
    "DROP INDEX audit_log_set_access",
    "DROP INDEX audit_log_user",
    "DELETE FROM schema_migrations WHERE version >= 20",  # and the steps after
]


def test_postgresql_store_of_step_19(pg_url: str) -> None:
    from psycopg.rows import dict_row

    def scan(mem: Memory) -> Any:
        store: Any = mem.store
        with store._pool.connection() as conn:
            conn.row_factory = dict_row
            return pg_scan(conn)

    with Memory(pg_url, embedder="hashing", background=False) as mem:
        past, now = _fill(mem)
        index, found = scan(mem)
        assert index == found and ("acme", "carol", "bob", past) in found
        store: Any = mem.store
        with store._pool.connection() as conn:
            for sql in _PG_UNDO:
                conn.execute(sql)
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        assert scan(mem) == (found, found)
        _after(mem, past, now)
