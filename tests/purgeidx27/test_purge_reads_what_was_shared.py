"""A whole-user purge reads what was shared with the user, not the tenant: the history
deltas it decodes are those of the records shared with them, and (SQLite) every
statement it runs on other users' set_access events finds them by their seq, never by
the tenant. Counted, not timed. Both fail before the index of readers (purgeidx27): the
purge decoded every delta of the tenant, and read the tenant's set_access events by
``audit_log_tenant_at``. (The redaction of the user's own events still reads the
tenant's log by that index on SQLite: no room is left on the schema's page for another
index, migrations.py v16; PostgreSQL has ``audit_log_user``.)"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import memstrata.store.purged_reader as purged_reader
from memstrata import Memory, Scope

BOB = Scope("acme", "bob")
CAROL = Scope("acme", "carol")
OTHERS = 60  # bob's records shared with dave, each with two versions more


def _fill(mem: Memory) -> str:
    mem.add(CAROL, "carol's own note")
    for i in range(OTHERS):
        rec = mem.add(BOB, f"bob's note {i}")
        mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["dave"])
        mem.set_access(BOB, rec.id, allowed_users=["dave", "erin"])
    shared = mem.add(BOB, "bob's note for carol")
    mem.set_access(BOB, shared.id, visibility="shared", allowed_users=["carol"])
    return shared.id


def _count_decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    real = purged_reader.decode_delta

    def counted(blob: bytes) -> Any:
        calls[0] += 1
        return real(blob)

    monkeypatch.setattr(purged_reader, "decode_delta", counted)
    return calls


def _purge_and_check(mem: Memory, shared: str, calls: list[int]) -> None:
    assert mem.get(BOB.as_caller("carol"), shared).id == shared
    assert mem.purge(CAROL).remaining == 0
    assert calls[0] <= 4, calls  # carol's record's deltas, not the tenant's 120
    assert all("carol" not in v.access.allowed_users for v in mem.history(BOB, shared))
    events = mem.audit.query("acme", action="set_access", record_id=shared)
    assert [e.details["allowed_users"] for e in events] == [[]]


def test_sqlite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "p.db"
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        shared = _fill(mem)
        store: Any = mem.store
        statements: list[str] = []
        store._conn.set_trace_callback(statements.append)
        calls = _count_decodes(monkeypatch)
        try:
            _purge_and_check(mem, shared, calls)
        finally:
            store._conn.set_trace_callback(None)
    on_log = [
        s
        for s in statements
        if "audit_log" in s
        and "allowed_users" in s
        and s.lstrip().upper().startswith(("SELECT", "UPDATE"))
    ]
    assert on_log  # the check sees the purge's statements
    conn = sqlite3.connect(db)
    try:
        for s in on_log:
            plan = " | ".join(str(r[3]) for r in conn.execute("EXPLAIN QUERY PLAN " + s))
            assert "audit_log_tenant_at" not in plan and "SCAN audit_log" not in plan, (s, plan)
            assert "INTEGER PRIMARY KEY (rowid=?)" in plan, (s, plan)
    finally:
        conn.close()


def test_postgresql(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        shared = _fill(mem)
        _purge_and_check(mem, shared, _count_decodes(monkeypatch))
