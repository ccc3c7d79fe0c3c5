"""SQLite: no byte of the purged user's id left in the file or its WAL, none in a history
delta (deflated, so a byte scan cannot see it: decoded here), and the audit log's trigger
lets the reader's redaction through only inside the purge's transaction, for that reader
alone (migration 16)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

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


def _trigger_refuses(db: Path, sql: str, flag: str | None) -> bool:
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        if flag is not None:
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('audit_redact_reader', ?)",
                (flag,),
            )
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
    "WHERE action = 'set_access' AND details LIKE '%carol%'"
)


@pytest.mark.parametrize(
    ("sql", "flag", "refused"),
    [
        (_DROP, CAROL_ID, False),  # the purge's redaction, inside its transaction
        (_DROP, None, True),  # no flag: refused
        (_DROP, "dave", True),  # the flag names another reader: refused
        (  # the flag set, but another column changed too
            _DROP.replace("SET details", "SET reason = 'x', details"),
            CAROL_ID,
            True,
        ),
        (  # a reader added, not removed
            _DROP.replace('["dave"]', '["dave","mallory"]'),
            CAROL_ID,
            True,
        ),
        (  # another key of details changed
            "UPDATE audit_log SET details = json_set(details, '$.visibility', 'public') "
            "WHERE action = 'set_access'",
            CAROL_ID,
            True,
        ),
        (_DROP.replace('["dave"]', "[]"), CAROL_ID, True),  # another reader removed too
        ("DELETE FROM audit_log", CAROL_ID, True),
    ],
)
def test_the_trigger_allows_only_the_readers_redaction(
    tmp_path: Path, sql: str, flag: str | None, refused: bool
) -> None:
    db = tmp_path / "t.db"
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        rec = mem.add(BOB, "bob's note")
        mem.set_access(BOB, rec.id, visibility="shared", allowed_users=[CAROL_ID, "dave"])
    assert _trigger_refuses(db, sql, flag) is refused


_V4_TRIGGER = """
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
WHEN NOT (NEW.user IS NULL AND NEW.record_ids = '[]' AND NEW.reason = '[purged]'
          AND NEW.details = '{}' AND NEW.actor IN (OLD.actor, '[purged]')
          AND NEW.seq = OLD.seq AND NEW.id = OLD.id AND NEW.tenant = OLD.tenant
          AND NEW.action = OLD.action AND NEW.at = OLD.at
          AND NEW.policy IS OLD.policy AND NEW.score IS OLD.score)
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END
"""


def test_a_file_from_schema_15_gets_the_new_trigger(tmp_path: Path) -> None:
    """A store written before (schema 15, v4's trigger) is migrated when opened, then
    purges the reader from its events; the purged user's own events are redacted as
    before."""
    db = tmp_path / "old.db"
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        mine = mem.add(CAROL, "carol's own note")
        mem.set_access(CAROL, mine.id, visibility="shared", allowed_users=["bob"])
        rec = mem.add(BOB, "bob's note")
        mem.set_access(BOB, rec.id, visibility="shared", allowed_users=[CAROL_ID, "dave"])
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN")
    conn.execute("DROP TRIGGER audit_log_no_update")
    conn.execute(_V4_TRIGGER)
    conn.execute("PRAGMA user_version = 15")
    conn.execute("COMMIT")
    conn.close()
    shutil.copy(db, tmp_path / "copy.db")
    assert _trigger_refuses(tmp_path / "copy.db", _DROP, CAROL_ID)  # v4 refuses it
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        assert mem.purge(CAROL).remaining == 0
        events = mem.audit.query("acme", action="set_access")
        assert [(e.user, e.details) for e in events] == [
            (None, {}),
            ("bob", {"visibility": "shared", "allowed_users": ["dave"], "allowed_roles": []}),
        ]
    assert _file_bytes(db).count(CAROL_ID.encode()) == 0
