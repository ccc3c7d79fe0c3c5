"""``memstrata export NAME`` / ``import NAME`` with a file name longer than the file system
takes (ENAMETOOLONG): a raw ``OSError`` traceback from ``Path.is_dir`` / ``Path.exists``,
which raise it (they return False only for a missing file). Session 29's audit: one line,
nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata import Memory, Scope
from memstrata.cli.app import app


@pytest.mark.parametrize("command", ["export", "import"])
@pytest.mark.parametrize("name", ["x" * 300, "d" * 300 + "/e.jsonl", "9" * 5000])
def test_a_name_too_long_is_one_line(tmp_path: Path, command: str, name: str) -> None:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    with Memory(db, embedder="hashing", background=False) as mem:
        mem.add(Scope("t", "u"), "I keep bees")
    args = ["--db", db, "--tenant", "t", "--user", "u", "--embedder", "hashing"]
    res = CliRunner().invoke(app, [*args, command, str(tmp_path / name)])
    assert res.exit_code == 2, (res.output, res.exception)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "File name too long" in res.stderr and "nothing was" in res.stderr, res.stderr
    assert len(res.stderr) < 600, res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.db"]


@pytest.mark.parametrize("command", [["add", "hi"], ["list"], ["stats"], ["search", "bees"]])
def test_a_store_name_too_long_is_one_line(tmp_path: Path, command: list[str]) -> None:
    db = f"sqlite:///{tmp_path / ('x' * 300 + '.db')}"
    res = CliRunner().invoke(app, ["--db", db, "--tenant", "t", "--user", "u", *command])
    assert res.exit_code == 2, (res.output, res.exception)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "cannot open a store at" in res.stderr and "File name too long" in res.stderr
    assert list(tmp_path.iterdir()) == []


def test_keys_on_a_url_with_a_nul_is_one_line(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["--db", "sqlite:///a\x00b.db", "keys", "list"])
    assert res.exit_code == 2, (res.output, res.exception)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "holds a NUL character" in res.stderr, res.stderr
