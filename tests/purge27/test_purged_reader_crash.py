"""kill -9 during a whole-user purge that takes the user out of other users' records and
events: inside its transaction nothing is done (the user still reads what was shared with
them, purging again works), after its commit everything is (no byte of the id in the
SQLite file once opened again; no row naming it on PostgreSQL). Uses crash23's child."""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from crash23.child import VICTIM
from crash23.kill import file_bytes, run
from memstrata import Memory, Scope
from memstrata.errors import NotFoundError

OTHER = Scope("acme", "bystander-4242")


def _fill(url: str) -> str:
    with Memory(url, embedder="hashing", background=False) as mem:
        mem.add(VICTIM, "the victim's own note")
        rec = mem.add(OTHER, "the bystander's shared plan")
        mem.set_access(OTHER, rec.id, visibility="shared", allowed_users=[VICTIM.user, "dave"])
        mem.set_access(OTHER, rec.id, allowed_users=[VICTIM.user, "dave", "erin"])
        return rec.id


def _state(mem: Memory, rid: str) -> tuple[bool, list[list[str]], bool]:
    """Whether the victim still reads the record, the readers of its set_access events,
    and whether any version of it names the victim."""
    try:
        mem.get(OTHER.as_caller(VICTIM.user), rid)
        reads = True
    except NotFoundError:
        reads = False
    events = mem.audit.query("acme", action="set_access")
    named = any(VICTIM.user in v.access.allowed_users for v in mem.history(OTHER, rid))
    return reads, [list(e.details["allowed_users"]) for e in events], named


BEFORE = (True, [[VICTIM.user, "dave"], [VICTIM.user, "dave", "erin"]], True)
AFTER = (False, [["dave"], ["dave", "erin"]], False)

SQLITE_GATES = {
    "update records set access@1": BEFORE,  # inside the transaction: nothing done
    "drop trigger@1": BEFORE,  # the log's trigger dropped for the redaction: back, too
    "update audit_log set details@1": BEFORE,
    "commit@1": BEFORE,
    "vacuum@1": AFTER,  # after its commit: all done, the bytes go at the next open
    "pragma wal_checkpoint@1": AFTER,
}


@pytest.mark.parametrize("gate", sorted(SQLITE_GATES))
def test_sqlite(tmp_path: Path, gate: str) -> None:
    path = tmp_path / "m.db"
    url = f"sqlite:///{path}"
    rid = _fill(url)
    assert run(url, gate, "purge-user") == -signal.SIGKILL
    with Memory(url, embedder="hashing", background=False) as mem:
        assert _state(mem, rid) == SQLITE_GATES[gate]
        if SQLITE_GATES[gate] is BEFORE:
            assert mem.purge(VICTIM.user_scope).remaining == 0
            assert _state(mem, rid) == AFTER
        assert VICTIM.user.encode() not in file_bytes(path)
        assert mem.get(OTHER.as_caller("erin"), rid).id == rid
    with sqlite3.connect(path) as conn:  # the audit log is append-only still
        assert conn.execute(
            "SELECT count(*) FROM sqlite_master WHERE name = 'audit_log_no_update'"
        ).fetchone() == (1,)
    assert VICTIM.user.encode() not in file_bytes(path)


def _rows_naming(mem: Memory, needle: str) -> int:
    store: Any = mem.store
    n = 0
    with store._pool.connection() as conn:
        for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = "
            "current_schema() AND table_type = 'BASE TABLE'"
        ).fetchall():
            n += conn.execute(
                f'SELECT count(*) AS n FROM "{r["table_name"]}" t WHERE t::text LIKE %s',
                (f"%{needle}%",),
            ).fetchone()["n"]
    return n


PG_GATES = {
    "select set_config@1": BEFORE,  # inside the transaction
    "update records set access@1": BEFORE,
    "update audit_log set details@1": BEFORE,
    # (each statement counts twice: Connection.execute calls Cursor.execute)
    'update audit_log set "user"@3': AFTER,  # Memory's second redaction, after the commit
}


@pytest.mark.parametrize("gate", sorted(PG_GATES))
def test_postgresql(pg_url: str, gate: str) -> None:
    rid = _fill(pg_url)
    assert run(pg_url, gate, "purge-user") == -signal.SIGKILL
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        assert _state(mem, rid) == PG_GATES[gate]
        if PG_GATES[gate] is BEFORE:
            assert mem.purge(VICTIM.user_scope).remaining == 0
            assert _state(mem, rid) == AFTER
        assert _rows_naming(mem, VICTIM.user) == 0
