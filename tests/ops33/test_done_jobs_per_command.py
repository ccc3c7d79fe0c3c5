"""``--done-jobs-days DAYS|keep`` after the command as well as before it (as
``--vector-cache-rows``): ``memstrata maintain --done-jobs-days 2``, ``worker``, ``serve``,
``mcp``; the command's own value wins over the global option and the variable, with the same
checks (exit 2 before any store is opened). Real CLI processes on SQLite, seeded as jobs32b's
tests of the global option (4 done jobs due 30 days ago, 4 due 3 days ago).

Before session 33 it was a global option only: after the command it was "No such option"
(exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs32b.test_done_jobs_option import OLD, VARIABLE, YOUNG, _cli, _done, _seed
from ops33.started import run_until_started, start_lines
from serving import free_port


@pytest.mark.parametrize(
    ("before", "after", "env", "swept", "left"),
    [
        ([], ["--done-jobs-days", "2"], {}, 8, set()),
        ([], ["--done-jobs-days", "KEEP"], {}, 0, OLD | YOUNG),
        (["--done-jobs-days", "2"], ["--done-jobs-days", "keep"], {}, 0, OLD | YOUNG),
        (["--done-jobs-days", "keep"], ["--done-jobs-days", "10"], {}, 4, YOUNG),
        ([], ["--done-jobs-days", "60"], {VARIABLE: "2"}, 0, OLD | YOUNG),
    ],
)
def test_maintain_takes_it_and_the_commands_value_wins(
    tmp_path: Path,
    before: list[str],
    after: list[str],
    env: dict[str, str],
    swept: int,
    left: set[str],
) -> None:
    db = f"sqlite:///{tmp_path / 'm.db'}"
    _seed(db)
    done = _cli(db, *before, "maintain", *after, "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["jobs_swept"] == swept
    assert _done(db) == left


def test_the_worker_takes_it(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'w.db'}"
    _seed(db, maintain_job=True)
    done = _cli(db, "--done-jobs-days", "keep", "worker", "--once", "--done-jobs-days", "1")
    assert done.returncode == 0, done.stderr
    assert _done(db) == set()


@pytest.mark.parametrize("command", ["maintain", "worker", "serve", "mcp"])
@pytest.mark.parametrize("value", ["0", "nan", "a week"])  # jobs32b tries 8 globally
def test_a_bad_value_after_the_command_is_refused_the_same_way(
    tmp_path: Path, command: str, value: str
) -> None:
    db = tmp_path / "x.db"
    done = _cli(f"sqlite:///{db}", command, "--done-jobs-days", value)
    assert done.returncode == 2, (value, done.stdout, done.stderr)
    assert "Invalid value for '--done-jobs-days'" in done.stderr, done.stderr
    assert "number of days > 0, or 'keep'" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not db.exists()  # refused before any store was opened


@pytest.mark.parametrize("command", ["maintain", "worker", "serve", "mcp"])
def test_each_commands_help_lists_it(command: str, tmp_path: Path) -> None:
    done = _cli(f"sqlite:///{tmp_path / 'h.db'}", command, "--help")
    assert done.returncode == 0, done.stderr
    assert "--done-jobs-days" in done.stdout, done.stdout


def test_serve_and_mcp_serve_with_the_commands_value(tmp_path: Path) -> None:
    """What their start line says is what their memory keeps (``ServeConfig``)."""
    db = f"sqlite:///{tmp_path / 's.db'}"
    _seed(db)
    args = ["--db", db, "--embedder", "hashing", "--done-jobs-days", "keep", "serve",
            "--port", str(free_port()), "--done-jobs-days", "2"]  # fmt: skip
    _, err = run_until_started(args, tmp_path, "memstrata.start", env={VARIABLE: "9"})
    (line,) = start_lines(err)
    assert line["done_jobs_days"] == 2 and "kept 2 days" in line["message"], line
    args = ["--db", db, "--embedder", "hashing", "mcp", "--transport", "http",
            "--port", str(free_port()), "--done-jobs-days", "keep"]  # fmt: skip
    _, err = run_until_started(args, tmp_path, "memstrata.start", env={VARIABLE: "9"})
    (line,) = start_lines(err)
    assert line["done_jobs_days"] is None and "kept forever" in line["message"], line
