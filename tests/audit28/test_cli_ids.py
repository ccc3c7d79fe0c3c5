"""Ids and scope names on the command line (session 28's audit).

Before: ``--user`` given bytes that are not UTF-8 (the shell passes them, Python decodes
them with surrogateescape) was accepted by ``Scope`` and every command failed deep in the
store with a UnicodeEncodeError traceback; ``get``/``delete``/``history`` given such an id
did the same; and a record whose id holds capitals (an imported record's, a document's) could
not be named at all: the id was lower-cased before the lookup, so ``get Note-A`` said "no
record id ... starts with 'note-a'" while ``list`` showed ``Note-A``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata import Memory, Scope, ValidationError
from memstrata.cli.app import app

BAD = "caf\udce9"  # what Python makes of argv bytes b"caf\xe9"


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
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert says in res.stderr, res.stderr
    assert "Traceback" not in res.output


@pytest.mark.parametrize("field", ["tenant", "user", "agent", "session", "caller"])
def test_a_scope_refuses_a_lone_surrogate(field: str) -> None:
    ids = {"tenant": "t", "user": "u", field: BAD}
    with pytest.raises(ValidationError, match=f"scope.{field} contains a lone surrogate"):
        Scope(**ids)


@pytest.mark.parametrize("option", ["--user", "--tenant", "--session", "--agent"])
def test_a_scope_option_that_is_not_utf8_is_one_error_line(base: list[str], option: str) -> None:
    args = [*base, option, BAD]
    _fails([*args, "list"], "lone surrogate")
    _fails([*args, "add", "more bees"], "lone surrogate")


@pytest.mark.parametrize("command", ["get", "delete", "restore", "history"])
def test_an_id_that_is_not_utf8_is_one_error_line(base: list[str], command: str) -> None:
    _fails([*base, command, BAD], "lone surrogate")


def test_a_record_whose_id_has_capitals_can_be_named(base: list[str], tmp_path: Path) -> None:
    out = tmp_path / "ex.jsonl"
    assert CliRunner().invoke(app, [*base, "export", str(out)]).exit_code == 0
    lines = out.read_text().splitlines()
    rec = json.loads(lines[1])
    rec["record"]["id"] = "Note-A"
    rec["record"]["user"] = "v"
    (tmp_path / "ex2.jsonl").write_text("\n".join([lines[0], json.dumps(rec), *lines[2:]]) + "\n")
    other = [*base[:-4], "--user", "v", *base[-2:]]
    res = CliRunner().invoke(app, [*other, "import", str(tmp_path / "ex2.jsonl")])
    assert res.exit_code == 0, res.output
    for command in (["get", "Note-A"], ["get", "Note"], ["get", "note-a"], ["history", "Note-A"]):
        res = CliRunner().invoke(app, [*other, *command])
        assert res.exit_code == 0, (command, res.output)
        assert "bees" in res.output, (command, res.output)
    res = CliRunner().invoke(app, [*other, "delete", "Note-A"])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(app, [*other, "get", "Note-A", "--deleted"])
    assert "deleted" in res.output, res.output


@pytest.mark.parametrize("role", ["\udc00", "a\x00b"], ids=["surrogate", "nul"])
def test_a_callers_role_no_store_can_compare_is_refused(mem: Memory, role: str) -> None:
    # before: a raw UnicodeEncodeError from the SQL stores (surrogate), a StoreError on
    # PostgreSQL (NUL), while memory:// answered
    owner = Scope("t", "bob")
    mem.add(owner, "bob's note")
    with pytest.raises(ValidationError, match="scope.roles contains"):
        mem.list(owner.as_caller("alice", {role}))
    with pytest.raises(ValidationError, match="scope.roles contains"):
        Scope("t", "bob", caller="alice", roles=frozenset({role}))
