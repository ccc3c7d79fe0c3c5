"""The CLI's plain coercion of str/bool/int/float options (cli/lazy.py) gives what typer's
pydantic coercion gives, refuses what it refuses, and keeps pydantic out of a search."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from memstrata.cli.lazy import LazyGroup, plain_coercion
from memstrata.memory import Memory
from memstrata.policies.forgetting import DEFAULT_POLICY


def _app(plain: bool) -> typer.Typer:
    own = typer.Typer(rich_markup_mode=None)

    @own.command()
    def show(
        name: str,
        count: int = 1,
        ratio: float = 0.5,
        flag: Annotated[bool, typer.Option("--flag")] = False,
        level: Annotated[int, typer.Option(min=1, max=3)] = 1,
        clamped: Annotated[int, typer.Option(min=0, max=5, clamp=True)] = 2,
        tag: Annotated[list[str] | None, typer.Option()] = None,
        num: Annotated[list[int] | None, typer.Option()] = None,
        switch: Annotated[bool, typer.Option("--switch/--no-switch")] = True,
    ) -> None:
        """Echo the coerced values as JSON."""
        typer.echo(json.dumps([name, count, ratio, flag, level, clamped, tag, num, switch]))

    if plain:

        class Root(LazyGroup):
            pass

        Root.own = own
        app = typer.Typer(cls=Root, rich_markup_mode=None)
    else:
        app = typer.Typer(rich_markup_mode=None)
        app.registered_commands += own.registered_commands

    @app.callback()
    def root(verbose: Annotated[int, typer.Option("-v", count=True)] = 0) -> None:
        """Root."""

    return app


CASES = [
    ["show", "ann"],
    ["show", "ann", "--count", "7", "--ratio", "2.5", "--flag", "--level", "3"],
    ["show", "ann", "--count", " 7 ", "--ratio", "1e3", "--clamped", "9"],
    ["show", "ann", "--tag", "a", "--tag", "b", "--num", "1", "--num", "2", "--no-switch"],
    ["-v", "-v", "show", "ann", "--clamped", "-4"],
    ["show", "ann", "--count", "seven"],
    ["show", "ann", "--ratio", "fast"],
    ["show", "ann", "--level", "0"],
    ["show", "ann", "--level", "4"],
    ["show", "ann", "--num", "x"],
    ["show", "--help"],
]


@pytest.mark.parametrize("argv", CASES, ids=[" ".join(c) for c in CASES])
def test_plain_coercion_agrees_with_typers_own(argv: list[str]) -> None:
    runner = CliRunner()
    plain, pydantic = runner.invoke(_app(True), argv), runner.invoke(_app(False), argv)
    assert plain.exit_code == pydantic.exit_code, (plain.output, pydantic.output)
    if plain.exit_code == 0:
        assert plain.stdout == pydantic.stdout
    else:
        assert plain.exit_code == 2 and "Invalid value" in plain.output, plain.output


def test_only_plain_types_get_the_plain_coercion() -> None:
    from typer.main import get_command

    class Root(LazyGroup):
        pass

    own = typer.Typer()

    @own.command()
    def cmd(path: Path, mode: Annotated[str, typer.Option(parser=str.upper)] = "a") -> None:
        """A path and a parsed option."""

    Root.own = own
    app = typer.Typer(cls=Root)

    @app.callback()
    def root() -> None:
        """Root."""

    command = get_command(app).commands["cmd"]  # type: ignore[attr-defined]
    assert not any(plain_coercion(p) for p in command.params)  # already decided: untouched
    assert all(p._runtime_param is None for p in command.params)


def test_a_search_imports_neither_pydantic_nor_another_command(tmp_path: Path) -> None:
    probe = (
        "import sys, json, atexit\n"
        "atexit.register(lambda: sys.__stderr__.write('MODULES' + json.dumps(sorted("
        "m for m in sys.modules if m.split('.')[0] in ('pydantic', 'typer') or "
        "m.startswith('memstrata.')))+ '\\n'))\n"
        "from memstrata.cli.app import main\n"
        "main()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSTRATA_", "OPENAI_"))}
    base = ["--db", "sqlite:///s.db", "--tenant", "t", "--user", "u", "--embedder", "hashing"]

    def modules(*argv: str) -> set[str]:
        res = subprocess.run(
            [sys.executable, "-c", probe, *argv],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert res.returncode == 0, res.stderr
        line = next(x for x in res.stderr.splitlines() if x.startswith("MODULES"))
        return set(json.loads(line[len("MODULES") :]))

    modules(*base, "add", "I keep bees")
    for argv in (("search", "bees", "-k", "3", "--layer", "semantic"), ("list", "--json")):
        loaded = modules(*base, *argv)
        assert not {m for m in loaded if m.startswith("pydantic")}, argv
        assert "typer._adapters" not in loaded, argv
        for lazy in (
            "memstrata.layers.stack",
            "memstrata.llm.base",
            "memstrata.worker",
            "memstrata.maintenance",
            "memstrata.portability",
            "memstrata.context.builder",
            "memstrata.cli.layer_commands",
        ):
            assert lazy not in loaded, (argv, lazy)


def test_maintain_defaults_to_the_default_policy() -> None:
    default = inspect.signature(Memory.maintain).parameters["policy"].default
    assert default == DEFAULT_POLICY
