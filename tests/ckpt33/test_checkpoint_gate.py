"""SQLite's WAL checkpoint runs after a write's commit, outside the read gate.

A commit that writes buffered access counters holds the read gate (store.py's ``_Gate``)
so that no reader counts them twice. SQLite's automatic checkpoint ran inside that
``COMMIT``: every ~1000 pages a commit held the gate 12-27 ms and searches waited behind
it. The store now turns it off on its write connection and checkpoints after the commit
(``_checkpoint_due``), and these tests hold it to the guarantees the automatic one gave.
"""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstrata import Memory, Scope
from memstrata.store.sqlite import store as sqlite_store
from memstrata.store.sqlite.store import SQLiteStore, _Gate

ANN = Scope("acme", "ann")
_WORDS = [f"w{i:05d}" for i in range(20000)]
_PAGES = 200  # the tests' threshold (a write here is ~40-80 pages)


def _text(rng: random.Random, words: int = 40) -> str:
    """Words drawn from many, so each record writes ~40-80 pages of the lexical index."""
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def _wal(db: Path) -> int:
    wal = Path(f"{db}-wal")
    return wal.stat().st_size if wal.exists() else 0


class _WatchedGate(_Gate):
    """Counts the exclusive sections (commits of in-flight counters) during which the main
    file changed: in WAL mode only a checkpoint writes to it."""

    def __init__(self, db: Path) -> None:
        super().__init__()
        self.db = db
        self.sections = 0
        self.checkpointed_inside = 0

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with super().exclusive():
            before = os.stat(self.db)
            try:
                yield
            finally:
                after = os.stat(self.db)
                self.sections += 1
                if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
                    self.checkpointed_inside += 1


def test_no_checkpoint_runs_while_a_commit_holds_the_read_gate(tmp_path: Path) -> None:
    """Fails before the fix: SQLite's automatic checkpoint ran inside the gated COMMIT."""
    db = tmp_path / "m.db"
    store = SQLiteStore(str(db))
    gate = _WatchedGate(db)
    store._gate = gate
    rng = random.Random(7)
    checkpoints = 0
    with Memory(store=store, embedder="hashing", background=False) as mem:
        seed = mem.add(ANN, "the seed note")
        main = os.stat(db)
        for _ in range(1000):  # ~50 pages a write: a checkpoint every ~20 writes
            store.touch(ANN, [seed.id], datetime.now(UTC))  # so every write carries counters
            mem.add(ANN, _text(rng))
            now = os.stat(db)
            if (now.st_size, now.st_mtime_ns) != (main.st_size, main.st_mtime_ns):
                checkpoints += 1  # in WAL mode only a checkpoint writes the main file
                main = now
            if checkpoints >= 3:
                break
    assert checkpoints >= 3
    assert gate.sections > 20  # the writes did go through the gate
    assert gate.checkpointed_inside == 0


class _ReadDuringCheckpoint(SQLiteStore):
    """At each due checkpoint, a read on another thread must begin and end first."""

    reads_done = 0

    def _checkpoint_due(self) -> None:
        assert self._wal is not None
        limit, wal = self._wal
        if os.stat(wal).st_size > limit:
            done = threading.Event()

            def read() -> None:
                with self._read() as c:
                    c.execute("SELECT count(*) FROM records").fetchone()
                done.set()

            reader = threading.Thread(target=read)
            reader.start()
            reader.join(timeout=120)  # held gate: it never ends (not a timing bound)
            assert done.is_set(), "a read could not begin while the store checkpointed"
            self.reads_done += 1
        super()._checkpoint_due()


def test_a_read_begins_while_the_writer_checkpoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_store, "_CHECKPOINT_PAGES", _PAGES)
    db = tmp_path / "m.db"
    store = _ReadDuringCheckpoint(str(db))
    rng = random.Random(8)
    with Memory(store=store, embedder="hashing", background=False) as mem:
        seed = mem.add(ANN, "the seed note")
        for _ in range(80):
            store.touch(ANN, [seed.id], datetime.now(UTC))
            mem.add(ANN, _text(rng))
        assert mem.get(ANN, seed.id) is not None
    assert store.reads_done >= 2


def test_the_wal_stays_bounded_with_two_writers_on_one_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two stores (two connections, as two processes have) writing one file in turn: each
    checkpoints after its own writes; the WAL never passes a small multiple of the
    threshold; closing both leaves every write in the main file."""
    monkeypatch.setattr(sqlite_store, "_CHECKPOINT_PAGES", _PAGES)
    db = tmp_path / "m.db"
    rng = random.Random(9)
    url = f"sqlite:///{db}"
    with (
        Memory(url, embedder="hashing", background=False) as one,
        Memory(url, embedder="hashing", background=False) as two,
    ):
        limit = _PAGES * 8192
        biggest = 0
        for i in range(150):
            (one if i % 2 else two).add(ANN, _text(rng))
            biggest = max(biggest, _wal(db))
        assert biggest > limit  # the threshold was reached
        assert biggest < 2 * limit  # at most one write past it
    assert _wal(db) == 0  # the last close checkpointed (and removed) the WAL
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM records").fetchone()[0] == 150


def test_a_failed_checkpoint_leaves_the_write_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """SQLite refuses the checkpoint (an authorizer on the write connection): every write
    still succeeds, is logged, and the next write after the refusal ends checkpoints."""
    monkeypatch.setattr(sqlite_store, "_CHECKPOINT_PAGES", _PAGES)
    db = tmp_path / "m.db"
    store = SQLiteStore(str(db))
    limit = _PAGES * 8192

    def no_checkpoint(action: int, arg1: str | None, *_: object) -> int:
        refused = action == sqlite3.SQLITE_PRAGMA and arg1 == "wal_checkpoint"
        return sqlite3.SQLITE_DENY if refused else sqlite3.SQLITE_OK

    rng = random.Random(10)
    with Memory(store=store, embedder="hashing", background=False) as mem:
        store._conn.set_authorizer(no_checkpoint)
        ids = []
        with caplog.at_level(logging.WARNING, logger="memstrata.store.sqlite.store"):
            for _ in range(60):
                ids.append(mem.add(ANN, _text(rng)).id)
        assert _wal(db) > 2 * limit  # nothing checkpointed it
        assert all(mem.get(ANN, rid) is not None for rid in ids)
        assert any("checkpointing its WAL failed" in r.getMessage() for r in caplog.records)
        store._conn.set_authorizer(None)
        for _ in range(3):  # one checkpoints, the next starts the WAL over and trims it
            mem.add(ANN, _text(rng))
        assert _wal(db) < 2 * limit


def test_a_relative_path_still_checkpoints_after_a_chdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The WAL's size is read by its absolute path: ``m.db-wal`` after a ``chdir`` named
    no file, and the store never checkpointed (nor could SQLite's own ``close``)."""
    monkeypatch.setattr(sqlite_store, "_CHECKPOINT_PAGES", _PAGES)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    rng = random.Random(11)
    with Memory("sqlite:///m.db", embedder="hashing", background=False) as mem:
        monkeypatch.chdir(tmp_path / "elsewhere")
        biggest = 0
        with caplog.at_level(logging.WARNING, logger="memstrata.store.sqlite.store"):
            for _ in range(80):
                mem.add(ANN, _text(rng))
                biggest = max(biggest, _wal(tmp_path / "m.db"))
    assert _PAGES * 8192 < biggest < 2 * _PAGES * 8192
    assert not [r for r in caplog.records if "checkpoint" in r.getMessage()]


def test_a_memory_store_writes_as_before(caplog: pytest.LogCaptureFixture) -> None:
    rng = random.Random(12)
    with (
        caplog.at_level(logging.WARNING, logger="memstrata.store.sqlite.store"),
        Memory("sqlite:///:memory:", embedder="hashing", background=False) as mem,
    ):
        seed = mem.add(ANN, "the seed note")
        for _ in range(30):
            mem.search(ANN, "seed")
            mem.add(ANN, _text(rng))
        assert mem.get(ANN, seed.id) is not None
    assert not caplog.records
