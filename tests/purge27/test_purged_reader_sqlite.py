"""SQLite: no byte of the purged user's id left in the file or its WAL, none in a history
delta (deflated, so a byte scan cannot see it: decoded here), and the audit log stays
append-only: the purge's redaction of other users' events goes its own narrow way
(audit_backends.sqlite_redact_reader), and the trigger is the same afterwards."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from memstrata import Memory, Scope
from memstrata.store.sqlite.history import decode_delta

BOB = Scope("acme", "bob")
CAROL_ID = "carol.smith@example.com"
CAROL = Scope("acme", CAROL_ID)


def _fill(mem: Memory) -> str:
    mem.add(CAROL, "carol's own note")
    rec = mem.add(BOB, "bob's door code is 4471")
    mem.set_access(BOB, rec.id, visibility="shared", allowed_users=[CAROL_ID, "dave"])
    mem.set_access(BOB, rec.id, allowed_users=["dave"])  # carol only in an earlier version
    mem.set_access(BOB, rec.id, allowed_users=["dave", CAROL_ID])
    for i in range(30):  # other records and history, so the pages are not all rewritten
        other = mem.add(BOB, f"bob's other note {i}")
        mem.set_access(BOB, other.id, visibility="shared", allowed_users=["dave"])
    return rec.id


def _deltas_naming(db: Path, needle: str) -> int:
    conn = sqlite3.connect(db)
    try:
        blobs = [r[0] for r in conn.execute("SELECT delta FROM record_history")]
    finally:
        conn.close()
    return sum(needle in json.dumps(decode_delta(b), ensure_ascii=False) for b in blobs)


def _file_bytes(db: Path) -> bytes:
    return b"".join(
        Path(str(db) + s).read_bytes() for s in ("", "-wal") if Path(str(db) + s).exists()
    )


def test_no_byte_of_the_id_in_the_file_its_wal_or_a_delta(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        rid = _fill(mem)
        assert _deltas_naming(db, CAROL_ID) >= 1  # the scan can see what it looks for
        report = mem.purge(CAROL)
        # checked while the store is open: the WAL is there, as another process sees it
        assert _file_bytes(db).count(CAROL_ID.encode()) == 0
        assert _deltas_naming(db, CAROL_ID) == 0
        assert report.remaining == 0
        assert mem.get(BOB.as_caller("dave"), rid).id == rid
    assert _file_bytes(db).count(CAROL_ID.encode()) == 0


def _trigger(db: Path) -> str | None:
    conn = sqlite3.connect(db)
    try:
        row = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'audit_log_no_update'"
        ).fetchone()
        return None if row is None else str(row[0])
    finally:
        conn.close()


def _refused(db: Path, sql: str) -> bool:
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(sql)
        except sqlite3.IntegrityError as exc:
            assert "append-only" in str(exc)
            return True
        finally:
            conn.execute("ROLLBACK")
        return False
    finally:
        conn.close()


_DROP = (
    "UPDATE audit_log SET details = json_set(details, '$.allowed_users', json('[\"dave\"]')) "
    "WHERE action = 'set_access'"
)


def test_the_log_is_append_only_before_and_after_the_redaction(tmp_path: Path) -> None:
    """The purge takes the reader out of the events on a path of its own (the trigger
    dropped and created again in its transaction): the trigger is the same afterwards,
    and refuses the same update made any other way."""
    db = tmp_path / "t.db"
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        rec = mem.add(BOB, "bob's note")
        mem.set_access(BOB, rec.id, visibility="shared", allowed_users=[CAROL_ID, "dave"])
        mem.add(CAROL, "carol's own note")
    before = _trigger(db)
    assert before is not None and _refused(db, _DROP)
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        mem.purge(CAROL)
        (event,) = mem.audit.query("acme", action="set_access")
        assert event.details["allowed_users"] == ["dave"]
    assert _trigger(db) == before
    assert _refused(db, _DROP.replace('["dave"]', "[]"))
    assert _refused(db, "DELETE FROM audit_log")
