"""The CLI: every command documented and in the README; a real round trip through it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from memstrata.cli.app import app

README = Path(__file__).resolve().parents[2] / "README.md"


def _commands() -> dict[str, object]:
    root = get_command(app)
    out: dict[str, object] = {}
    for name, cmd in root.commands.items():  # type: ignore[attr-defined]
        sub = getattr(cmd, "commands", None)
        if sub:
            out.update({f"{name} {s}": c for s, c in sub.items()})
        else:
            out[name] = cmd
    return out


def test_every_command_has_help_and_is_in_the_readme() -> None:
    readme = README.read_text(encoding="utf-8")
    for name, cmd in _commands().items():
        assert (cmd.help or "").strip(), f"{name} has no help text"  # type: ignore[attr-defined]
        assert re.search(rf"`memstrata {re.escape(name)}\b", readme), f"{name} not in README"


@pytest.fixture
def cli(tmp_path: Path) -> tuple[CliRunner, list[str]]:
    base = [
        "--db",
        f"sqlite:///{tmp_path / 'cli.db'}",
        "--tenant",
        "t",
        "--user",
        "u",
        "--embedder",
        "hashing",
    ]
    return CliRunner(), base


def _json(runner: CliRunner, args: list[str]) -> object:
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_round_trip(cli: tuple[CliRunner, list[str]], tmp_path: Path) -> None:
    runner, base = cli
    rec = _json(runner, [*base, "add", "I keep bees in my garden", "--role", "user", "--json"])
    rid = rec["id"]  # type: ignore[index]
    hits = _json(runner, [*base, "search", "bees", "--json", "--explain"])
    assert hits[0]["record"]["id"] == rid  # type: ignore[index]
    assert hits[0]["explanation"]["match"] == pytest.approx(hits[0]["score"])  # type: ignore[index]
    assert _json(runner, [*base, "get", rid, "--json"])["id"] == rid  # type: ignore[index]
    assert len(_json(runner, [*base, "list", "--json"])) == 1  # type: ignore[arg-type]
    assert _json(runner, [*base, "delete", rid, "--json"])["status"] == "deleted"  # type: ignore[index]
    assert _json(runner, [*base, "restore", rid, "--json"])["status"] == "active"  # type: ignore[index]
    assert len(_json(runner, [*base, "history", rid, "--json"])) == 3  # type: ignore[arg-type]
    out = tmp_path / "x.jsonl"
    assert _json(runner, [*base, "export", str(out), "--json"])["exported"] == 1  # type: ignore[index]
    other = [*base[:4], "--user", "v", *base[6:]]
    assert _json(runner, [*other, "import", str(out), "--remap", "--json"])["imported"] == 1  # type: ignore[index]
    assert _json(runner, [*other, "stats", "--json"])["records"] == 1  # type: ignore[index]
    purged = _json(runner, [*base, "purge", "--yes", "--json"])
    assert purged["remaining"] == 0  # type: ignore[index]


def test_errors_are_clear_and_exit_2(cli: tuple[CliRunner, list[str]]) -> None:
    runner, base = cli
    res = runner.invoke(app, [*base, "add", "   ", "--role", "user"])
    assert res.exit_code == 2
    assert "empty" in res.output
    res = runner.invoke(app, [*base, "get", "nope"])
    assert res.exit_code == 2 and "nope" in res.output
    res = runner.invoke(app, ["--db", base[1], "--embedder", "hashing", "search", "x"])
    assert res.exit_code == 2 and "--tenant" in res.output
    res = runner.invoke(app, [*base, "purge"])
    assert res.exit_code == 2 and "--yes" in res.output
