"""`memstrata bench startup`: times real CLI processes per source tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata.bench.startup import (
    StartupConfig,
    command_args,
    run_startup,
    startup_markdown,
)

SRC = Path(__file__).resolve().parents[2] / "src"


def test_each_timed_call_uses_a_fresh_text() -> None:
    first = command_args("search", 0, "sqlite:///a.db", None)
    second = command_args("search", 1, "sqlite:///a.db", None)
    assert first != second and first[-2] == "search"
    assert command_args("help", 3, "sqlite:///a.db", "hashing") == ["--help"]
    assert "--embedder" in command_args("add", 0, "sqlite:///a.db", "hashing")
    with pytest.raises(ValueError, match="unknown command"):
        command_args("dance", 0, "sqlite:///a.db", None)


def test_a_small_run_times_every_command_per_source(tmp_path: Path) -> None:
    cfg = StartupConfig(
        sources=(str(SRC),),
        runs=1,
        notes=1,
        embedder="hashing",
        commands=("help", "search", "stats"),
    )
    res = run_startup(cfg)
    rows = {(r["source"], r["command"]): r for r in res["rows"]}
    assert set(rows) == {(str(SRC), c) for c in ("help", "search", "stats")}
    for row in rows.values():
        assert len(row["wall_s"]) == 1 and row["wall_s"][0] > 0 and row["cpu_s"][0] > 0
        assert row["cpu_median_s"] <= row["wall_median_s"] * 4  # 2 threads of the embedder
    md = startup_markdown(res)
    assert "| search |" in md and "load average" in md


def test_bad_configs_are_refused() -> None:
    with pytest.raises(ValueError, match="runs"):
        run_startup(StartupConfig(runs=0))
    with pytest.raises(ValueError, match="unknown command"):
        run_startup(StartupConfig(commands=("dance",)))
    with pytest.raises(ValueError, match="once"):
        run_startup(StartupConfig(sources=("src", "src")))
