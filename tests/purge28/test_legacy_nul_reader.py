"""PostgreSQL: a record (or a set_access event) whose readers include a legacy id holding
NUL (stored before session 20 refused one: ``\\u0000`` in the JSON text, which jsonb
refuses) had none of its readers in the index (schema step 20 skipped the whole row), so
the purge of another of its readers left them in it. Now the trigger indexes the other
readers and step 21 indexes the rows and events step 20 skipped. The NUL id itself is not
indexed: no user can have it (``Scope`` refuses NUL), so no purge names it. SQLite (the
reference) indexed them all, but its purge cut the legacy id of such an event at the NUL
(its JSON functions): the event is edited in Python now, the id kept whole."""

from __future__ import annotations

import json
from typing import Any

from memstrata import Memory, Scope

BOB = Scope("acme", "bob")
CAROL = Scope("acme", "carol")
LEGACY = "old\x00id"


def _legacy(mem: Memory, text: str) -> str:
    """A record of bob's shared with carol, dave and the legacy id, as an old store holds
    it (written by SQL: the library refuses the id), and its set_access event."""
    rec = mem.add(BOB, text)
    access = json.dumps(
        {"allowed_roles": [], "allowed_users": [LEGACY, "carol", "dave"], "visibility": "shared"},
        sort_keys=True,
        separators=(",", ":"),
    )
    assert "\\u0000" in access
    store: Any = mem.store
    with store._pool.connection() as c:
        c.execute("UPDATE records SET access = %s WHERE id = %s", (access, rec.id))
        details = json.dumps({"allowed_users": [LEGACY, "carol"], "visibility": "shared"})
        c.execute(
            'INSERT INTO audit_log (id, tenant, "user", actor, action, at, record_ids, '
            "details) VALUES (%s, 'acme', 'bob', 'library', 'set_access', "
            "'2020-01-01T00:00:00+00:00', ARRAY[%s], %s)",
            ("legacy-" + rec.id, rec.id, details),
        )
    return rec.id


def _after(mem: Memory, rid: str) -> None:
    assert mem.purge(CAROL).remaining == 0
    kept = mem.get(BOB, rid)
    assert kept.access.allowed_users == (LEGACY, "dave")  # the others' readers are kept
    assert all("carol" not in v.access.allowed_users for v in mem.history(BOB, rid))
    (event,) = [
        e for e in mem.audit.query("acme", action="set_access") if e.id.startswith("legacy-")
    ]
    assert event.details["allowed_users"] == [LEGACY]


def test_a_write_of_such_a_row_indexes_its_other_readers(pg_url: str) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        mem.add(CAROL, "carol's note")
        rid = _legacy(mem, "bob's note with a legacy reader")
        store: Any = mem.store
        with store._pool.connection() as c:
            got = c.execute(
                "SELECT reader FROM record_readers WHERE id = %s ORDER BY reader", (rid,)
            ).fetchall()
        assert [r["reader"] for r in got] == ["carol", "dave"]
        _after(mem, rid)


def test_step_21_indexes_what_step_20_skipped(pg_url: str) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        mem.add(CAROL, "carol's note")
        rid = _legacy(mem, "bob's note with a legacy reader")
        store: Any = mem.store
        with store._pool.connection() as c:  # the store as step 20 left it
            c.execute("DELETE FROM record_readers WHERE id = %s", (rid,))
            c.execute("DELETE FROM schema_migrations WHERE version > 20")
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        _after(mem, rid)


def test_sqlite_indexes_them_too(tmp_path: Any) -> None:
    """SQLite (the reference): its step 16 indexes every reader, the NUL id included, and
    the purge takes carol out of the record and the event, the NUL id kept."""
    import sqlite3

    db = tmp_path / "m.db"
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        mem.add(CAROL, "carol's note")
        rec = mem.add(BOB, "bob's note with a legacy reader")
    access = json.dumps(
        {"allowed_roles": [], "allowed_users": [LEGACY, "carol", "dave"], "visibility": "shared"},
        sort_keys=True,
        separators=(",", ":"),
    )
    details = json.dumps({"allowed_users": [LEGACY, "carol"], "visibility": "shared"})
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("UPDATE records SET access = ? WHERE id = ?", (access, rec.id))
        conn.execute(
            "INSERT INTO audit_log (id, tenant, user, actor, action, at, record_ids, details) "
            "VALUES (?, 'acme', 'bob', 'library', 'set_access', '2020-01-01T00:00:00+00:00', "
            "?, ?)",
            ("legacy-" + rec.id, json.dumps([rec.id]), details),
        )
        conn.execute("DROP TABLE rr")  # the file as before step 16: filled again on open
        conn.execute("PRAGMA user_version = 15")
    finally:
        conn.close()
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        _after(mem, rec.id)
