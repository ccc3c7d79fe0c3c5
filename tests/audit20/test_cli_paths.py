"""``memstrata export`` / ``import`` given a folder or a path in a missing folder: a
traceback (FileNotFoundError, ValueError, IsADirectoryError) before session 20's audit;
now one ``error:`` line naming the path and exit code 2, and no file left behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata.cli.app import app


@pytest.fixture
def base(tmp_path: Path) -> list[str]:
    args = ["--db", f"sqlite:///{tmp_path / 'cli.db'}", "--tenant", "t", "--user", "u"]
    args += ["--embedder", "hashing"]
    res = CliRunner().invoke(app, [*args, "add", "I keep bees in my garden"])
    assert res.exit_code == 0, res.output
    return args


def _fails(args: list[str], says: str) -> None:
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], res.stderr
    assert "Traceback" not in res.output


@pytest.mark.parametrize(
    ("target", "says"),
    [
        (".", "is a folder"),
        ("{tmp}", "is a folder"),
        ("{tmp}/missing/out.jsonl", "does not exist"),
    ],
)
def test_export_to_a_path_it_cannot_write(
    base: list[str], tmp_path: Path, target: str, says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    _fails([*base, "export", target.format(tmp=tmp_path)], says)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no .partial left


def test_import_of_a_folder(base: list[str], tmp_path: Path) -> None:
    _fails([*base, "import", str(tmp_path)], "is a folder")
    res = CliRunner().invoke(app, [*base, "stats", "--json"])
    assert res.exit_code == 0 and '"records": 1' in res.stdout
