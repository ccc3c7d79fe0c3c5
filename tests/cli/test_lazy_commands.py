"""Commands from other modules are imported only when named (cli/lazy.py), and never lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.main import get_command
from typer.testing import CliRunner

from memstrata.cli.app import _Root, app
from memstrata.cli.lazy import LazyCommands, load_module_commands

COMMAND_MODULES = (
    "memstrata.cli.layer_commands",
    "memstrata.cli.maintain_commands",
    "memstrata.cli.migrate_commands",
    "memstrata.cli.serve_commands",
    "memstrata.bench.cli",
)


@pytest.mark.parametrize("module", sorted(_Root.modules))
def test_the_table_names_exactly_what_each_module_registers(module: str) -> None:
    assert set(load_module_commands(module)) == set(_Root.modules[module])


def test_help_lists_every_command_of_every_module() -> None:
    res = CliRunner().invoke(app, ["--help"])
    assert res.exit_code == 0, res.output
    listed = {line.split()[0] for line in res.output.splitlines() if line.startswith("  ")}
    for names in _Root.modules.values():
        assert set(names) <= listed, (names, res.output)
    assert {"add", "search", "list", "stats", "demo"} <= listed


def test_a_name_missing_from_the_table_is_still_found() -> None:
    stale = LazyCommands({}, None, {".maintain_commands": (), ".layer_commands": ("layers",)})
    assert stale.get("maintain") is not None  # found by loading every module
    assert "task" in stale and "nosuch" not in stale
    assert list(stale)[:2] == ["maintain", "context"]  # table order, then each module's order


def test_only_the_named_command_is_built() -> None:
    own = typer.Typer(rich_markup_mode=None)
    built: list[str] = []

    @own.command()
    def first(x: int = 1) -> None:
        """One."""
        built.append(f"first {x}")

    @own.command("second-one")
    def second() -> None:
        """Two."""

    lazy = LazyCommands({}, own, {})
    assert lazy._own is not None and lazy._own._built == {}
    assert lazy["first"].name == "first" and set(lazy._own._built) == {"first"}
    assert list(lazy) == ["first", "second-one"]  # listing builds the rest
    with pytest.raises(TypeError):
        del lazy["first"]


def test_an_unknown_command_is_a_usage_error() -> None:
    res = CliRunner().invoke(app, ["serach", "x"])
    assert res.exit_code == 2 and "No such command" in res.output


def test_a_module_absent_from_the_install_adds_nothing_but_a_broken_one_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert load_module_commands("memstrata_no_such_module_xyz") == {}
    (tmp_path / "memstrata_broken_cmds.py").write_text(
        "import memstrata_missing_dependency_xyz\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="memstrata_missing_dependency_xyz"):
        load_module_commands("memstrata_broken_cmds")


def test_the_group_commands_mapping_behaves_like_a_dict() -> None:
    root = get_command(app)
    commands = root.commands  # type: ignore[attr-defined]
    assert "maintain" in commands and commands["maintain"].name == "maintain"
    assert len(commands) == len(list(commands))
    with pytest.raises(KeyError):
        commands["nosuch"]


def _modules_after(argv: list[str], cwd: Path) -> set[str]:
    probe = (
        "import sys, json, atexit\n"
        "atexit.register(lambda: sys.__stderr__.write('MODULES' + json.dumps("
        "[m for m in sys.modules if m.startswith(('memstrata', 'rich', 'pydantic'))]) "
        "+ '\\n'))\n"
        f"sys.argv = ['memstrata', *{argv!r}]\n"
        "from memstrata.cli.app import main\n"
        "main()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSTRATA_", "OPENAI_"))}
    res = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    line = next(x for x in res.stderr.splitlines() if x.startswith("MODULES"))
    return set(json.loads(line[len("MODULES") :]))


def test_search_imports_no_other_command_module(tmp_path: Path) -> None:
    base = ["--db", "sqlite:///s.db", "--tenant", "t", "--user", "u", "--embedder", "hashing"]
    added = _modules_after([*base, "add", "I keep bees"], tmp_path)
    searched = _modules_after([*base, "search", "bees"], tmp_path)
    for loaded in (added, searched):
        assert not loaded & set(COMMAND_MODULES), sorted(loaded & set(COMMAND_MODULES))
    # a read-only command builds no background worker, maintenance or import machinery
    for module in ("memstrata.portability", "memstrata.reembed", "memstrata.store.redis_hot"):
        assert module not in searched, module
    assert "memstrata.cli.maintain_commands" in _modules_after(
        [*base, "maintain", "--dry-run"], tmp_path
    )


# What the read commands must not load (issue 11: `memstrata search` <= 0.5 s): rich (its
# console and table are ~0.07 s; the CLI draws its own tables), pydantic and the LLM's task
# models, the PII policy (~0.03 s of regexes), the layer services and the in-memory store.
NOT_ON_THE_READ_PATH = (
    "rich",
    "pydantic",
    "memstrata.llm.models",
    "memstrata.llm.heuristic",
    "memstrata.policies.pii",
    "memstrata.layers",
    "memstrata.worker",
    "memstrata.store.memory",
)


def test_read_commands_load_neither_rich_nor_pydantic_nor_the_layers(tmp_path: Path) -> None:
    base = ["--db", "sqlite:///s.db", "--tenant", "t", "--user", "u", "--embedder", "hashing"]
    added = _modules_after([*base, "add", "I keep bees [x] in memstrata[postgres]"], tmp_path)
    assert "memstrata.layers" in added  # the probe sees what a command loads
    for command in (["search", "bees"], ["list"], ["stats"], ["--session", "s", "stats"]):
        loaded = _modules_after([*base, *command], tmp_path)
        assert "memstrata.store.sqlite" in loaded, command
        heavy = sorted(m for m in loaded if m.startswith(NOT_ON_THE_READ_PATH))
        assert heavy == [], (command, heavy)


def test_the_help_listing_shows_each_commands_own_short_help() -> None:
    """--help lists commands from their help texts without building them; what it shows
    must be what the built command says."""
    res = CliRunner().invoke(app, ["--help"])
    assert res.exit_code == 0, res.output
    rows = [
        line.split(None, 1)
        for line in res.output.split("Commands:")[1].splitlines()
        if line.startswith("  ") and not line.startswith("   ")
    ]
    assert len(rows) >= 25
    commands = get_command(app).commands  # type: ignore[attr-defined]
    for name, shown in rows:
        full = commands[name].get_short_help_str(200)
        assert full.startswith(shown.removesuffix("...").strip()), (name, shown, full)
