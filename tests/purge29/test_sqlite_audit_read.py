"""SQLite: a whole-user purge finds the user's own events, and those they acted in, by
reading the audit log in the table's order, not by ``audit_log_tenant_at`` (which looked
up each of the tenant's events in the table: ~290 ms at 100,000 events, more than the
purge's VACUUM; in order ~9-17 ms: docs/measurements.md, session 29,
tests/purge29/measure_audit_sqlite.py). An index by user or actor does not fit on the
schema's first page (tests/err26). The events are still all found and redacted."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memstrata import Memory, Scope
from memstrata.audit import PURGED
from memstrata.audit_backends import SUBJECT_EVENTS

CAROL = Scope("acme", "carol")
BOB = Scope("acme", "bob")


def test_the_read_is_in_table_order(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory(f"sqlite:///{path}", embedder="hashing", background=False) as mem:
        mem.add(CAROL, "carol's note")
    c = sqlite3.connect(path)
    try:
        plan = " ".join(
            str(r[3]) for r in c.execute(f"EXPLAIN QUERY PLAN {SUBJECT_EVENTS}", ("acme", "carol"))
        )
    finally:
        c.close()
    assert "SCAN audit_log" in plan and "audit_log_tenant_at" not in plan, plan


def test_every_event_is_still_found(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory(f"sqlite:///{path}", embedder="hashing", background=False) as mem:
        mine = mem.add(CAROL, "carol's note")
        theirs = mem.add(BOB, "bob's note")
        for n in range(50):  # other tenants' and users' events around hers
            mem.audit.record("globex", "carol", "delete", user="carol", record_ids=[f"g{n}"])
            mem.audit.record("acme", "library", "delete", user="bob", record_ids=[f"b{n}"])
        mem.delete(CAROL, mine.id, actor="carol")
        mem.delete(BOB, theirs.id, actor="carol")
        mem.purge(CAROL)
        events = mem.audit.query("acme", limit=1000)
        assert not [e for e in events if e.user == "carol" or e.actor == "carol"]
        assert [e.actor for e in events if e.user == "bob" and e.action == "delete"][-1] == PURGED
        assert len(mem.audit.query("globex", user="carol")) == 50  # another tenant's: kept
