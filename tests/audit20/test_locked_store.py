"""A store file another process holds locked: the library and the CLI said it was not a
memstrata store ("point the URL at a memstrata store file" / "not a readable memstrata
store ... check --db"), sending the user to fix a URL that was right. Now both say it is
locked and what to do. (Each open waits out the busy timeout first: about 5 s.)"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata import Memory, Scope, StoreError
from memstrata.cli.app import app


@pytest.fixture
def locked(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "held.db"
    with Memory(f"sqlite:///{path}", embedder="hashing", background=False) as mem:
        mem.add(Scope("t", "u"), "I keep bees in my garden")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    yield path
    holder.execute("ROLLBACK")
    holder.close()


def test_a_locked_store_is_named_locked(locked: Path) -> None:
    with pytest.raises(StoreError, match="locked by another process") as err:
        Memory(f"sqlite:///{locked}", embedder="hashing", background=False)
    assert "point the URL" not in str(err.value)
    res = CliRunner().invoke(
        app, ["--db", f"sqlite:///{locked}", "--tenant", "t", "--user", "u", "list"]
    )
    assert res.exit_code == 2
    assert "locked by another process" in res.stderr and "check --db" not in res.stderr
