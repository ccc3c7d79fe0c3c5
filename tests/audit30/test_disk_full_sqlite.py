"""A SQLite store on a disk that fills up under a live process: every call that needs the
disk is a ``StoreError`` that says the disk is full (never SQLite's own error), nothing of
the refused call is in the store, and once the disk has room the same ``Memory`` goes on.

Before session 30: a new store (a migration's target, an import's new file, the first
``memstrata add``) created on a disk with a few pages left said "cannot use ... as a
memstrata store: cannot rollback - no transaction is active; point the URL at a memstrata
store file" (the migration's ROLLBACK after SQLite had rolled back itself); with a handful
of 4 kB pages left, "the disk failed a read or a write ... check the disk" (the -shm file
could not grow, ``SQLITE_IOERR_SHMSIZE``); ``close()`` raised "could not commit ... free
disk space, then retry" when a search's access counters were buffered, though the store was
closed already and the documented "second close() does nothing" then raised "is closed".
"""

from __future__ import annotations

import io
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from memstrata import Memory, Message, Scope
from memstrata.errors import StoreError
from serving import CLI

from .conftest import ME, TinyDisk, filled


def _says_full(e: BaseException) -> None:
    assert isinstance(e, StoreError), repr(e)
    assert e.retryable is False
    assert "full" in str(e) and "free disk space" in str(e), str(e)
    assert "cannot rollback" not in str(e), str(e)


def _intact(path: Path) -> None:
    with sqlite3.connect(path) as c:
        assert c.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


def test_every_write_on_a_full_disk_says_so_and_the_memory_goes_on(tiny_disk: TinyDisk) -> None:
    db = tiny_disk.path / "m.db"
    ids = filled(f"sqlite:///{db}")
    mem = Memory(f"sqlite:///{db}", embedder="hashing", background=False)
    try:
        before = mem.export_records(ME, io.StringIO())
        export = io.StringIO()
        mem.export_records(ME, export)
        tiny_disk.fill()
        writes = [
            lambda: mem.add(ME, "one more note about herons " * 40, dedup=False),
            lambda: mem.add_messages(
                ME, [Message(role="user", content=f"turn {i} " * 50) for i in range(20)]
            ),
            lambda: mem.delete(ME, ids[0]),
            lambda: mem.forget(ME, ids[1:3]),
            lambda: mem.maintain(ME),
            lambda: mem.purge(ME, ids[3:4]),
            lambda: mem.import_records(io.StringIO(export.getvalue()), into=Scope("acme", "bob")),
            lambda: mem.compact(),  # VACUUM, then a TRUNCATE checkpoint of the WAL
        ]
        for write in writes:
            with pytest.raises(StoreError) as caught:
                write()
            _says_full(caught.value)
        # reads go on while the disk is full
        assert mem.search(ME, "heron") and mem.get(ME, ids[0]).id == ids[0]
        assert mem.export_records(ME, io.StringIO()) == before
        tiny_disk.free()
        # nothing of the refused calls was written; the same memory writes again
        assert {r.id for r in mem.list(ME, limit=1000)} == set(ids)
        assert mem.list(Scope("acme", "bob")) == []
        mem.add(ME, "written once the disk had room", dedup=False)
        assert len(mem.list(ME, limit=1000)) == len(ids) + 1
    finally:
        tiny_disk.free()
        mem.close()
    _intact(db)


@pytest.mark.parametrize("leave", [0, 4096, 16384, 49152, 98304])
def test_a_new_store_on_a_nearly_full_disk_says_the_disk_is_full(
    tiny_disk: TinyDisk, leave: int
) -> None:
    db = tiny_disk.path / "new.db"
    tiny_disk.fill(leave=leave)
    with pytest.raises(StoreError) as caught:
        Memory(f"sqlite:///{db}", embedder="hashing", background=False).close()
    e = caught.value
    assert "full" in str(e), str(e)  # not "cannot use ... as a memstrata store", not "I/O"
    assert "cannot rollback" not in str(e) and "point the URL" not in str(e), str(e)
    tiny_disk.free()
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        mem.add(ME, "the store the first open could not finish", dedup=False)
        assert len(mem.list(ME)) == 1
    _intact(db)


def test_close_on_a_full_disk_closes_and_a_second_close_does_nothing(tiny_disk: TinyDisk) -> None:
    db = tiny_disk.path / "m.db"
    ids = filled(f"sqlite:///{db}")
    mem = Memory(f"sqlite:///{db}", embedder="hashing", background=False)
    for query in ("heron", "lake", "fact"):
        assert mem.search(ME, query)  # access counters, buffered
    tiny_disk.fill()
    with pytest.raises(StoreError) as caught:
        mem.close()  # said "could not commit ... nothing of this call was written ... retry"
    e = caught.value
    assert "closed without writing its buffered access counters" in str(e), str(e)
    assert "records are not affected" in str(e) and "full" in str(e), str(e)
    assert e.retryable is False
    tiny_disk.free()
    mem.close()  # raised "is closed"
    with pytest.raises(StoreError, match="is closed"):
        mem.search(ME, "heron")
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as again:
        assert {r.id for r in again.list(ME, limit=1000)} == set(ids)
    _intact(db)


def test_a_full_temporary_folder_is_named_when_the_stores_disk_has_room(
    tmp_path: Path, tiny_disk: TinyDisk
) -> None:
    # SQLite's temporary files (the new store's indexes) go to TMPDIR, read once per
    # process: a child with TMPDIR on the full disk, the store on the roomy one
    tiny_disk.fill()
    env = {**os.environ, "TMPDIR": str(tiny_disk.path)}
    env.pop("SQLITE_TMPDIR", None)
    done = subprocess.run(
        [*CLI, "--db", f"sqlite:///{tmp_path / 'new.db'}", "--tenant", "acme", "--user"]
        + ["alice", "--embedder", "hashing", "add", "a heron"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "full" in done.stderr and str(tiny_disk.path) in done.stderr, done.stderr
    assert "TMPDIR" in done.stderr, done.stderr  # said only "the database or its disk is full"
