"""``memstrata --vector-cache-rows N`` (or ``MEMSTRATA_VECTOR_CACHE_ROWS``): the bound of the
store's in-process vector cache for every command that opens a memory (``worker``,
``search``, ``add``, ``maintain``, ...), as ``--db`` and ``--embedder`` reach them.

Before session 30's cli30 only ``serve``/``mcp`` took ``--vector-cache-rows``: ``memstrata
worker`` on a small machine kept the 500,000-row default whatever it was told (the option
was "No such option", the variable ignored)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memstrata.cli.app import app
from memstrata.memory import Memory
from memstrata.store.vector_bound import VECTOR_CACHE_ROWS

RUN = CliRunner()


@pytest.fixture
def bounds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The vector-cache bound of each memory a command opened, read from its real store
    as the command closes it."""
    seen: list[int] = []
    close = Memory.close

    def noting_close(self: Memory) -> None:
        store: Any = self._store
        if store is not None:
            seen.append(getattr(store, "sync", store)._vectors.max_rows)
        close(self)

    monkeypatch.setattr(Memory, "close", noting_close)
    return seen


def _cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    base = ["--db", f"sqlite:///{tmp_path / 'm.db'}", "--tenant", "t", "--user", "u"]
    return RUN.invoke(app, [*base, "--embedder", "hashing", *args], env=env)


def test_the_default_is_the_stores(tmp_path: Path, bounds: list[int]) -> None:
    done = _cli(tmp_path, "add", "I moved to Lisbon in May")
    assert done.exit_code == 0, done.output
    assert bounds == [VECTOR_CACHE_ROWS]


@pytest.mark.parametrize(
    "command",
    [
        ["add", "I moved to Lisbon in May"],
        ["search", "Lisbon"],
        ["worker", "--once"],
        ["maintain"],
    ],
)
def test_the_option_reaches_every_command(
    tmp_path: Path, bounds: list[int], command: list[str]
) -> None:
    assert _cli(tmp_path, "add", "I moved to Lisbon in May").exit_code == 0
    bounds.clear()
    done = _cli(tmp_path, "--vector-cache-rows", "64", *command)
    assert done.exit_code == 0, done.output
    assert bounds == [64]


def test_the_variable_too(tmp_path: Path, bounds: list[int]) -> None:
    env = {"MEMSTRATA_VECTOR_CACHE_ROWS": "128"}
    done = _cli(tmp_path, "add", "I moved to Lisbon in May", env=env)
    assert done.exit_code == 0, done.output
    done = _cli(tmp_path, "--vector-cache-rows", "32", "worker", "--once", env=env)
    assert done.exit_code == 0, done.output
    assert bounds == [128, 32]  # the option wins over the variable


@pytest.mark.parametrize("value", ["0", "-5", "many", "1.5"])
def test_a_bad_value_is_a_usage_error_naming_it(
    tmp_path: Path, bounds: list[int], value: str
) -> None:
    for how in (["--vector-cache-rows", value], []):
        env = {} if how else {"MEMSTRATA_VECTOR_CACHE_ROWS": value}
        done = _cli(tmp_path, *how, "add", "I moved to Lisbon in May", env=env)
        assert done.exit_code == 2, done.output
        assert "--vector-cache-rows" in done.output
    assert bounds == []  # refused before any store opened
    assert not (tmp_path / "m.db").exists()


def test_serve_takes_the_global_bound_unless_given_its_own(tmp_path: Path) -> None:
    from memstrata.cli.options import Settings
    from memstrata.cli.serve_commands import _vector_cache_rows

    settings = Settings(
        url=f"sqlite:///{tmp_path}/s.db",
        tenant=None,
        user=None,
        agent=None,
        session=None,
        embedder=None,
        llm=None,
        openai_base_url=None,
        openai_api_key=None,
        vector_cache_rows=77,
    )
    assert _vector_cache_rows(None, settings) == 77
    assert _vector_cache_rows(9, settings) == 9
    settings.vector_cache_rows = None
    assert _vector_cache_rows(None, settings) == VECTOR_CACHE_ROWS


def test_a_real_worker_process(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'w.db'}"
    args = [sys.executable, "-m", "memstrata", "--db", url, "--tenant", "t", "--user", "u"]
    args += ["--embedder", "hashing"]
    env = {**os.environ, "COLUMNS": "200"}
    done = subprocess.run(
        [*args, "add", "I moved to Lisbon in May"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    done = subprocess.run(
        [*args, "--vector-cache-rows", "64", "worker", "--once", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert '"done"' in done.stdout
    done = subprocess.run(
        [*args, "worker", "--once"],
        capture_output=True,
        text=True,
        env={**env, "MEMSTRATA_VECTOR_CACHE_ROWS": "0"},
        timeout=120,
    )
    assert done.returncode == 2
    assert "Invalid value for '--vector-cache-rows'" in done.stderr, done.stderr
