"""A SQLite store that this process cannot write: on a file system mounted read-only, or
its files made immutable under a live process. The error names the cause and the fix; once
the files are writable again the same ``Memory`` writes, and nothing refused is stored.

Before session 30: opening a store on a read-only file system (SQLite cannot make the
-shm file a WAL store needs, "unable to open database file") said "cannot use ... as a
memstrata store ...; point the URL at a memstrata store file", and every CLI command "is
not a readable memstrata store ...; check --db" (it is one, and readable); a write to a
live store whose files were made read-only said "the disk failed a read or a write ...
check the disk" (``SQLITE_IOERR_WRITE``, EPERM).
"""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.errors import StoreError
from serving import CLI

from .conftest import ME, filled, immutable


def test_a_store_on_a_read_only_file_system_says_so(read_only_view: tuple[Path, Path]) -> None:
    folder, view = read_only_view
    filled(f"sqlite:///{folder / 'm.db'}")
    with pytest.raises(StoreError) as caught:
        Memory(f"sqlite:///{view / 'm.db'}", embedder="hashing", background=False)
    e = caught.value
    assert "mounted read-only" in str(e) and "copy the store" in str(e), str(e)
    assert "point the URL" not in str(e) and e.retryable is False, str(e)


@pytest.mark.parametrize("command", [["search", "heron"], ["list"], ["add", "a note"]])
def test_the_cli_says_the_file_system_is_read_only(
    read_only_view: tuple[Path, Path], command: list[str]
) -> None:
    folder, view = read_only_view
    filled(f"sqlite:///{folder / 'm.db'}")
    url = f"sqlite:///{view / 'm.db'}"
    done = subprocess.run(
        [*CLI, "--db", url, "--tenant", "acme", "--user", "alice", "--embedder", "hashing"]
        + command,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "mounted read-only" in done.stderr, done.stderr
    assert "not a readable memstrata store" not in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["mcp"]])
def test_serve_and_mcp_say_the_file_system_is_read_only(
    read_only_view: tuple[Path, Path], command: list[str]
) -> None:
    folder, view = read_only_view
    filled(f"sqlite:///{folder / 'm.db'}")
    done = subprocess.run(
        [*CLI, "--db", f"sqlite:///{view / 'm.db'}", "--embedder", "hashing", *command],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stderr  # said "cannot open the API key table in
    assert "mounted read-only" in done.stderr, done.stderr  # ...: unable to open database file"


def test_a_live_store_made_read_only_says_so_and_writes_again(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    ids = filled(f"sqlite:///{db}")
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        mem.add(ME, "written before", dedup=False)  # the -wal and -shm files exist
        with immutable(db, Path(f"{db}-wal")):  # the -shm too: SIGBUS (docs)
            with pytest.raises(StoreError) as caught:
                mem.add(ME, "refused: the files are immutable", dedup=False)
            e = caught.value
            assert "not writable" in str(e) and "chattr -i" in str(e), str(e)
            assert e.retryable is False
            assert mem.search(ME, "heron")  # reads go on
        mem.add(ME, "written after", dedup=False)
        texts = {r.content.raw for r in mem.list(ME, limit=1000)}
    assert "refused: the files are immutable" not in texts
    assert {"written before", "written after"} <= texts and len(texts) == len(ids) + 2
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
