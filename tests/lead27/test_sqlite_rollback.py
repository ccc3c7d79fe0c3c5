"""A failed write whose ROLLBACK fails too still reports why the write failed.

Before session 27 the SQLite store ran ``ROLLBACK`` bare after a failed write: when it
raised (the disk failing under it), its raw ``sqlite3`` error replaced the write's own
``StoreError``, and the transaction stayed open, so every later write on that store said
"a transaction was opened while this thread already has one open". A disk that fails on
demand is not available here: the store's connection is wrapped so that its next ROLLBACK
raises as a failing disk's would; everything else is the real SQLite.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memstrata import Memory, Scope
from memstrata.errors import StoreError

ME = Scope("acme", "alice")


class _RollbackFails:
    """The store's connection, with its next ``failures`` ROLLBACKs failing."""

    def __init__(self, conn: sqlite3.Connection, failures: int) -> None:
        self._conn = conn
        self.failures = failures

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql == "ROLLBACK" and self.failures:
            self.failures -= 1
            raise sqlite3.OperationalError("disk I/O error")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _refusing(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute(
        "CREATE TRIGGER l27_refuse BEFORE INSERT ON records WHEN NEW.raw LIKE '%heron%' "
        "BEGIN SELECT RAISE(ABORT, 'refused by l27'); END"
    )
    conn.commit()
    conn.close()


@pytest.mark.parametrize("failures", [1, 2])
def test_the_write_s_own_error_survives_a_failing_rollback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, failures: int
) -> None:
    db = tmp_path / "m.db"
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        mem.add(ME, "an egret on the pond", dedup=False)
    _refusing(db)
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        store: Any = mem.store
        wrapped = _RollbackFails(store._conn, failures)
        store._conn = wrapped
        try:
            with pytest.raises(StoreError, match="refused by l27"):
                mem.add(ME, "a heron on the pond", dedup=False)
            assert "ending a failed write's transaction failed too" in caplog.text
            if failures == 2:  # the next write's retry fails as well: it says so, whole
                with pytest.raises(StoreError, match="could not end an earlier failed write"):
                    mem.add(ME, "a kingfisher on the pond", dedup=False)
            kept = mem.add(ME, "a kingfisher on the pond", dedup=False)
        finally:
            store._conn = wrapped._conn
        texts = sorted(r.text for r in mem.list(ME))
        assert texts == ["a kingfisher on the pond", "an egret on the pond"]
        assert mem.get(ME, kept.id).text == "a kingfisher on the pond"
