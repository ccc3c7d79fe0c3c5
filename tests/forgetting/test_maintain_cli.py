"""``memstrata maintain`` prints a readable table for people and JSON for machines."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from memstrata.cli.app import app

COLUMNS = ("scanned", "forgotten", "downgraded", "preserved", "purged", "merged")


def _base(tmp_path: Path) -> list[str]:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    return ["--db", db, "--tenant", "acme", "--user", "alice", "--embedder", "hashing"]


def test_table_names_every_count(tmp_path: Path) -> None:
    runner = CliRunner()
    base = _base(tmp_path)
    for text in ("a note about tea", "the train leaves at nine from platform four"):
        assert runner.invoke(app, [*base, "add", text, "--json"]).exit_code == 0
    out = runner.invoke(app, [*base, "maintain", "--dry-run"])
    assert out.exit_code == 0, out.output
    rows = {
        cells[1].strip(): cells[2].strip()
        for line in out.output.splitlines()
        if len(cells := line.split("│")) > 3
    }
    assert set(COLUMNS) <= set(rows)
    assert rows["scanned"] == "2" and rows["forgotten"] == "0"
    assert "{" not in out.output and "'scanned'" not in out.output  # not a raw dict
    assert "dry run" in out.output and "alice" in out.output


def test_log_table_and_json(tmp_path: Path) -> None:
    runner = CliRunner()
    base = _base(tmp_path)
    assert runner.invoke(app, [*base, "add", "walked the dog in the park", "--json"]).exit_code == 0
    out = runner.invoke(app, [*base, "maintain", "--policy", "capacity", "--log"])
    assert out.exit_code == 0, out.output
    assert "no actions" in out.output or "action" in out.output
    data = json.loads(runner.invoke(app, [*base, "maintain", "--json", "--log"]).output)
    assert {*COLUMNS, "log", "refreshed"} <= set(data)
