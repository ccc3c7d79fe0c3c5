"""SQLite's errors inside a write transaction (a unit of work, or a write method's own)
come out as a ``StoreError`` that says what happened and what to do, the driver's error
as its cause; ``ConflictError``, ``ValidationError`` and the rest stay as they were. Before
session 25 they came out raw (``sqlite3.IntegrityError``, ``sqlite3.OperationalError``), and
a lock another process held past the busy timeout said only "could not start a
transaction: database is locked"."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from memstrata import AsyncMemory, Memory, Scope
from memstrata.errors import ConflictError, StoreError, ValidationError
from memstrata.records import RecordStatus

ME = Scope("acme", "alice", session="s1")


def _refuse(path: Path, table: str) -> None:
    conn = sqlite3.connect(path)
    conn.execute(
        f"CREATE TRIGGER o25_refuse BEFORE INSERT ON {table} "
        "BEGIN SELECT RAISE(ABORT, 'refused by o25'); END"
    )
    conn.commit()
    conn.close()


def test_a_statement_refused_in_a_unit_of_work_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory(f"sqlite:///{path}", embedder="hashing", background=False) as mem:
        rec = mem.add(ME, "a heron by the lake")
    _refuse(path, "audit_log")
    with Memory(f"sqlite:///{path}", embedder="hashing", background=False) as mem:
        with pytest.raises(StoreError, match="refused by o25") as caught:
            mem.delete(ME, rec.id)  # its set_status and its event: one unit of work
        assert isinstance(caught.value.__cause__, sqlite3.IntegrityError)
        assert "nothing of this call was written" in str(caught.value)
        assert mem.get(ME, rec.id).status is RecordStatus.ACTIVE
        # a write that is no unit of work's (the store's own transaction) says the same
        with pytest.raises(StoreError, match="refused by o25"):
            mem.audit.record("acme", "library", "note")

    async def through_async() -> None:
        async with AsyncMemory(f"sqlite:///{path}", embedder="hashing", background=False) as m:
            with pytest.raises(StoreError, match="refused by o25"):
                await m.delete(ME, rec.id)

    asyncio.run(through_async())


def test_a_lock_held_past_the_busy_timeout_names_the_other_process(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    mem = Memory(f"sqlite:///{path}", embedder="hashing", background=False)
    try:
        rec = mem.add(ME, "a heron by the lake")
        mem.store._conn.execute("PRAGMA busy_timeout = 200")  # type: ignore[attr-defined]
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process writing, for longer than that
        try:
            with pytest.raises(StoreError) as caught:
                mem.delete(ME, rec.id)
            message = str(caught.value)
            assert "another process" in message and "locked" in message
            assert "nothing of this call was written" in message
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert mem.delete(ME, rec.id).status is RecordStatus.DELETED  # free again: it writes
    finally:
        mem.close()


def test_a_full_database_says_so_and_the_store_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    mem = Memory(f"sqlite:///{path}", embedder="hashing", background=False)
    try:
        conn = mem.store._conn  # type: ignore[attr-defined]
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages + 2}")  # as a disk that is full
        with pytest.raises(StoreError, match="full") as caught:
            mem.add_messages(
                ME, [{"role": "user", "content": f"turn {i} " + "words " * 400} for i in range(60)]
            )
        assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
        assert "free" in str(caught.value)
        assert mem.list(ME) == []  # nothing of it
        conn.execute("PRAGMA max_page_count = 1073741823")
        assert mem.add(ME, "room again").text == "room again"
    finally:
        mem.close()


def test_errors_that_say_what_to_do_already_stay_as_they_are(tmp_path: Path) -> None:
    with Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", background=False) as mem:
        rec = mem.add(ME, "a heron by the lake")
        with pytest.raises(ConflictError):
            mem.update(ME, rec.id, content="an egret", expected_version=rec.version + 5)
        with pytest.raises(ValidationError, match="exists already"):
            mem.store.insert([_write_of(mem, rec)])


def _write_of(mem: Memory, rec: object) -> object:
    from memstrata.store.base import RecordWrite

    return RecordWrite(rec, None, ())  # type: ignore[arg-type]
