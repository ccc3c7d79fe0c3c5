"""A SQLite store migrated by a newer memstrata while this process has it open.

Opening a file of a newer schema is refused (``SchemaVersionError``); a process that
opened it before went on writing after another process of a newer memstrata migrated it.
Session 31's audit ran it: a process of schema 19 (97e4666^) kept adding turns after one of
schema 20 migrated the file (whose step re-indexes every turn under today's reply terms),
each indexed under the old rule, without a word. Such a write is refused now, nothing
written: every write transaction reads the file's ``user_version`` under the write lock
(simulated here as the newer process's last step does: ``PRAGMA user_version = N + 1``)."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from memstrata import AsyncMemory, Memory, SchemaVersionError, Scope
from memstrata.store.sqlite.migrations import SCHEMA_VERSION

ALICE = Scope("acme", "alice", session="s1")


def _migrate_underneath(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")


def _rows(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM records").fetchone()[0])


def test_a_write_after_a_newer_migration_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    mem = Memory(f"sqlite:///{db}", embedder="hashing", background=False)
    try:
        note = mem.add(ALICE, "the glaze was cobalt blue")
        _migrate_underneath(db)
        writes: list[Callable[[], object]] = [
            lambda: mem.add(ALICE, "another note"),
            lambda: mem.add_message(ALICE, "user", "a turn"),
            lambda: mem.delete(ALICE, note.id),
            lambda: mem.key.set(ALICE, "never nuts", priority=3),
        ]
        for write in writes:
            with pytest.raises(SchemaVersionError, match="migrated to schema version"):
                write()
        assert _rows(db) == 1
        assert mem.get(ALICE, note.id).content.raw == "the glaze was cobalt blue"  # reads go on
    finally:
        # closed all the same; its buffered access counters are not written, and it says so
        with pytest.raises(SchemaVersionError, match="migrated to schema version"):
            mem.close()
    with pytest.raises(SchemaVersionError, match="only knows up to"):  # as before: opening
        Memory(f"sqlite:///{db}", embedder="hashing", background=False)


def test_async_the_same(tmp_path: Path) -> None:
    db = tmp_path / "a.db"

    async def run() -> None:
        mem = AsyncMemory(f"sqlite:///{db}", embedder="hashing", background=False)
        await mem.add(ALICE, "first")
        _migrate_underneath(db)
        with pytest.raises(SchemaVersionError, match="nothing of this call was written"):
            await mem.add(ALICE, "second")
        # closed all the same; buffered counters, if any, are not written and it says so
        with contextlib.suppress(SchemaVersionError):
            await mem.aclose()

    asyncio.run(run())
    assert _rows(db) == 1
