"""The audit log: append-only (SQLite refuses UPDATE/DELETE), per tenant, queryable and
exportable, written by maintenance, forget, delete, restore and purge, never purged."""

from __future__ import annotations

import io
import json
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.errors import StoreError, ValidationError
from memstrata.records import RecordType, Source


def test_actions_are_audited_with_who_what_which_when_why(mem: Memory, clock: FixedClock) -> None:
    s = Scope("acme", "alice")
    weak = mem.add(
        s,
        "a passing remark about umbrellas",
        importance=0.1,
        source=Source.IMPLICIT_INFERENCE,
        type=RecordType.EPISODE,
    )
    note = mem.add(s, "my sister's birthday is in March", tags=["family"])
    clock.advance(days=100)
    mem.maintain(s, actor="key:k1")
    mem.delete(s, note.id, actor="user:alice")
    mem.restore(s, note.id)
    mem.set_importance_by_tag(s, "family", 0.9)
    mem.forget(s, [note.id], reason="user asked")
    events = mem.audit.query("acme")
    actions = [e.action for e in events]
    assert actions[:2] == ["forget", "maintain"]
    auto = events[0]
    assert auto.record_ids == (weak.id,) and auto.actor == "key:k1" and auto.user == "alice"
    assert auto.policy == "hybrid" and auto.score is not None and auto.score > 0.6
    assert auto.at == clock.now()
    assert actions[2:] == ["delete", "restore", "set_importance", "forget"]
    assert events[2].actor == "user:alice"
    assert mem.audit.query("acme", action="delete")[0].record_ids == (note.id,)
    assert [e.action for e in mem.audit.query("acme", record_id=note.id)] == [
        "delete",
        "restore",
        "set_importance",
        "forget",
    ]
    assert mem.audit.query("other-tenant") == []
    assert mem.audit.query("acme", since=clock.now() + timedelta(seconds=1)) == []


def test_export_is_json_lines_per_tenant(mem: Memory) -> None:
    a, b = Scope("acme", "alice"), Scope("globex", "bob")
    ra = mem.add(a, "note a")
    rb = mem.add(b, "note b")
    mem.delete(a, ra.id)
    mem.delete(b, rb.id)
    buf = io.StringIO()
    assert mem.audit.export("acme", buf) == 1
    [line] = buf.getvalue().splitlines()
    data = json.loads(line)
    assert data["tenant"] == "acme" and data["record_ids"] == [ra.id]
    assert rb.id not in buf.getvalue()


def test_purge_and_retention_never_delete_the_audit_log(mem: Memory, clock: FixedClock) -> None:
    s = Scope("acme", "alice", session="s1")
    r = mem.add(s, "something to purge")
    mem.delete(s, r.id)
    mem.purge(s.user_scope)
    clock.advance(days=3650)
    mem.maintain(s)
    actions = [e.action for e in mem.audit.query("acme")]
    assert actions[:2] == ["delete", "purge"] and "maintain" in actions


def test_sqlite_audit_table_is_append_only(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    m = Memory(f"sqlite:///{path}", embedder="hashing", background=False)
    r = m.add(Scope("acme", "alice"), "x y z")
    m.delete(Scope("acme", "alice"), r.id)
    m.close()
    conn = sqlite3.connect(path)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE audit_log SET actor = 'someone else'")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("DELETE FROM audit_log")
    assert conn.execute("SELECT count(*) FROM audit_log").fetchone()[0] == 1
    conn.close()


def test_bad_queries_and_events(mem: Memory) -> None:
    with pytest.raises(ValidationError):
        mem.audit.query("acme", limit=0)
    with pytest.raises(ValidationError):
        mem.audit.query("acme", colour="red")
    with pytest.raises(ValidationError):
        mem.audit.query("")
    with pytest.raises(ValidationError):
        mem.audit.record("acme", "", "delete")
    with pytest.raises(ValidationError):
        mem.audit.record("acme", "me", "x", score=float("nan"))


def test_a_store_without_an_audit_backend_is_refused() -> None:
    from memstrata.audit import audit_store

    with pytest.raises(StoreError, match="AuditStore"):
        audit_store(object())
