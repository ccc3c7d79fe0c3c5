"""SQLite counters are buffered: the read path takes no write lock and writes no version."""

from __future__ import annotations

import sqlite3
import time
from datetime import timedelta
from pathlib import Path

import pytest

from memstrata.errors import ValidationError
from memstrata.scope import Scope
from memstrata.store.sqlite import SQLiteStore

from .conftest import T0, Maker

ME = Scope("t1", "u1")


def _on_disk(path: Path, record_id: str) -> tuple[int, int]:
    conn = sqlite3.connect(path)
    try:
        access = conn.execute(
            "SELECT access_count FROM records WHERE id = ?", (record_id,)
        ).fetchone()[0]
        hits = conn.execute("SELECT coalesce(sum(value), 0) FROM counters").fetchone()[0]
    finally:
        conn.close()
    return int(access), int(hits)


def test_touch_is_buffered_visible_to_its_store_and_flushed(tmp_path: Path, maker: Maker) -> None:
    path = tmp_path / "c.db"
    store = SQLiteStore(str(path))
    w = maker.write()
    store.insert([w])
    rid = w.record.id
    # another process holds the write lock: the read path (touch, counts) still works
    blocker = sqlite3.connect(path, isolation_level=None, timeout=0.1)
    blocker.execute("BEGIN IMMEDIATE")
    store.touch(ME, [rid], T0 + timedelta(hours=1))
    store.add_counts(ME, "hits", {rid: 2})
    assert store.get(ME, rid).access_count == 1  # this store sees its buffer
    assert store.counts(ME, "hits", [rid]) == {rid: 2}
    blocker.execute("ROLLBACK")
    blocker.close()
    assert _on_disk(path, rid) == (0, 0)  # nothing written yet
    store.flush_counters()
    assert _on_disk(path, rid) == (1, 2)
    assert store.get(ME, rid).access_count == 1  # not counted twice
    assert store.counts(ME, "hits", [rid]) == {rid: 2}
    store.touch(ME, [rid], T0)
    store.close()  # close flushes
    assert _on_disk(path, rid) == (2, 2)


def test_a_failed_write_gives_the_buffer_back(tmp_path: Path, maker: Maker) -> None:
    store = SQLiteStore(str(tmp_path / "c.db"))
    w = maker.write()
    store.insert([w])
    store.touch(ME, [w.record.id], T0)
    with pytest.raises(ValidationError):
        store.insert([w])  # rolls back, counters included
    store.flush_counters()
    assert store.get(ME, w.record.id).access_count == 1
    store.close()


def test_many_touches_are_written_in_batches(tmp_path: Path, maker: Maker) -> None:
    path = tmp_path / "c.db"
    store = SQLiteStore(str(path))
    writes = [maker.write() for _ in range(600)]
    store.insert(writes)
    for w in writes:
        store.touch(ME, [w.record.id], T0)
    # past the batch size the buffer is written without any flush call, by a background
    # thread (the read path itself never writes): wait for it, at most 10 s
    written = 0
    deadline = time.monotonic() + 10
    while written < 512 and time.monotonic() < deadline:
        conn = sqlite3.connect(path)
        written = conn.execute("SELECT sum(access_count) FROM records").fetchone()[0] or 0
        conn.close()
        time.sleep(0.01)
    assert 512 <= written <= 600
    assert sum(r.access_count for r in store.get_many(ME, [w.record.id for w in writes])) == 600
    store.close()
