"""``memstrata task show`` numbered the plan from 1 (the context's block, written for a
model) while ``memstrata task step INDEX`` takes the step's index from 0 (as the library's
``update_step`` and the HTTP API's ``.../task/steps/{index}`` do): ``task step 1 completed``
after seeing "1. [ ] build" completed the second step. Session 29's audit: the CLI shows the
numbers ``task step`` takes (the argument, which scripts pass, is unchanged)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata.cli.app import app


@pytest.fixture
def base(tmp_path: Path) -> list[str]:
    return ["--db", f"sqlite:///{tmp_path / 'cli.db'}", "--tenant", "t", "--user", "u",
            "--embedder", "hashing", "--session", "s1"]  # fmt: skip


def _run(args: list[str]) -> str:
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    return res.stdout


def test_the_number_task_show_gives_a_step_is_the_one_task_step_takes(base: list[str]) -> None:
    steps = ["build", "test", "ship"]
    _run([*base, "task", "start", "release", *[a for s in steps for a in ("--step", s)]])
    shown = _run([*base, "task", "show"])
    for want, name in enumerate(steps):
        [number] = re.findall(rf"^(\d+)\. \[ \] {name}$", shown, re.M)
        _run([*base, "task", "step", number, "completed"])
        data = json.loads(_run([*base, "task", "show", "--json"]))
        done = [s["description"] for s in data["content"]["structured"]["steps"]
                if s["status"] == "completed"]  # fmt: skip
        assert done == steps[: want + 1], (number, shown)
    assert "0. [x] build" in _run([*base, "task", "show"])


def test_the_block_keeps_its_goal_results_errors_and_notes(base: list[str]) -> None:
    _run([*base, "task", "start", "release", "--step", "build", "--step", "test"])
    _run([*base, "task", "step", "0", "done", "--result", "50 rows"])
    _run([*base, "task", "step", "1", "fail", "--error", "timeout"])
    shown = _run([*base, "task", "note", "ask Lena"])
    assert "Goal: release" in shown
    assert "0. [x] build → 50 rows" in shown and "1. [!] test ✗ timeout" in shown, shown
    assert shown.index("Plan") < shown.index("Scratchpad:") < shown.index("- ask Lena")


def test_a_step_out_of_range_names_the_valid_numbers(base: list[str]) -> None:
    _run([*base, "task", "start", "release", "--step", "build", "--step", "test"])
    res = CliRunner().invoke(app, [*base, "task", "step", "2", "done"])
    assert res.exit_code != 0 and "valid: 0..1" in res.output, res.output
