"""``memstrata migrate`` stopped part-way by its target (a full disk here; a PostgreSQL
killed says the same) says to run it again with ``--resume``, and that completes the copy.

Before session 30 it said only the store's "free disk space ..., then retry" (or, for a
PostgreSQL backend killed, "re-read before retrying"); run again as told, the migration was
refused: "... already holds cache entries; nothing was written: ... pass resume=True
(--resume)".
"""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

from serving import CLI

from .conftest import TinyDisk, filled


def _migrate(source: Path, target: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "--db", f"sqlite:///{source}", "--embedder", "hashing", "migrate"]
        + ["--to", f"sqlite:///{target}", "--batch-size", "20", *more],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_migration_stopped_by_a_full_disk_says_resume_and_resume_completes_it(
    tmp_path: Path, tiny_disk: TinyDisk
) -> None:
    source = tmp_path / "source.db"
    filled(f"sqlite:///{source}", n=150)
    target = tiny_disk.path / "target.db"
    # room for the new file and a few batches, not for the whole copy (its WAL reaches ~4.7 MB)
    tiny_disk.fill(leave=1_400_000)
    stopped = _migrate(source, target)
    assert stopped.returncode == 2, stopped.stderr
    assert "full" in stopped.stderr and "Traceback" not in stopped.stderr, stopped.stderr
    assert "--resume" in stopped.stderr, stopped.stderr  # said only "... then retry"
    tiny_disk.free()
    resumed = _migrate(source, target, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "verified: the target holds exactly what the source holds" in resumed.stdout
    with sqlite3.connect(target) as c:
        assert c.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
