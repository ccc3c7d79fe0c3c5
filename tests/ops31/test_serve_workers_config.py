"""``memstrata serve --workers N`` checks its configuration in the supervisor, before it
starts any process (session 31). Before, what only the app factory refuses (an unknown
embedder or LLM, a store whose API keys cannot be kept, a Redis URL refused) was raised in
each process by ``app_from_env`` with a traceback; the process exited 1 and the supervisor
started another, forever: the command never ended. Now: ``error: ...`` once and exit 2,
as `serve` without ``--workers`` and the CLI's other bad settings."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memstrata.errors import ValidationError
from memstrata.server.factory import ServeConfig, check_serve_config
from serving import SRC, free_port

WAIT_S = 60  # a supervisor that started its processes is still running then


def _serve_workers(tmp_path: Path, options: list[str], serve: list[str]) -> tuple[int, str]:
    """``memstrata [options] serve --workers 2 [serve]``; its exit status and stderr. Fails
    the test if it still runs after WAIT_S (its process group is killed then)."""
    db = tmp_path / "s.db"
    cmd = [sys.executable, "-m", "memstrata", "--db", f"sqlite:///{db}", "--embedder", "hashing",
           *options, "serve", "--workers", "2", "--port", str(free_port()), *serve]  # fmt: skip
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
        start_new_session=True,
    )
    try:
        _, err = proc.communicate(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=30)
        pytest.fail(f"{' '.join(cmd[3:])} still ran after {WAIT_S} s: {err[-2000:]}")
    return proc.returncode, err


@pytest.mark.parametrize(
    ("options", "serve", "said"),
    [
        (["--embedder", "nonsense"], [], "unknown embedder 'nonsense'"),
        (["--llm", "nope"], [], "unknown LLM 'nope'"),
        (["--db", "foo://x"], [], "API keys for foo:// stores are not supported"),
        ([], ["--redis", "nope"], "is not a Redis URL"),
    ],
)
def test_a_bad_setting_stops_serve_workers_before_any_process(
    tmp_path: Path, options: list[str], serve: list[str], said: str
) -> None:
    code, err = _serve_workers(tmp_path, options, serve)
    assert code == 2, err
    assert err.count("error: ") == 1 and said in err, err
    assert "Traceback" not in err and "Started parent process" not in err, err


def test_the_supervisors_check_reads_the_processes_json() -> None:
    """What a process reads from ``MEMSTRATA_SERVE_CONFIG`` is checked: a vector-cache bound
    below 1 (a ``ServeConfig`` the CLI's options never make, min 1) names the setting."""
    with pytest.raises(ValidationError, match="vector_cache_rows must be at least 1"):
        check_serve_config(ServeConfig(url="memory://", embedder="hashing", vector_cache_rows=0))
    good = ServeConfig(url="memory://", embedder="hashing", vector_cache_rows=64)
    assert check_serve_config(good) == good


@pytest.mark.parametrize("command", [["serve"], ["serve", "--workers", "2"], ["mcp"]])
def test_an_unknown_log_level_is_a_usage_error(tmp_path: Path, command: list[str]) -> None:
    """Before: ``ValueError: Unknown level: 'LOUD'`` and its traceback, once the command had
    begun to set up (``serve --workers``: after its processes' configuration was checked)."""
    cmd = [sys.executable, "-m", "memstrata", "--db", f"sqlite:///{tmp_path / 's.db'}",
           "--embedder", "hashing", *command, "--port", str(free_port()),
           "--log-level", "loud"]  # fmt: skip
    done = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        env={**os.environ, "PYTHONPATH": SRC},
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "--log-level" in done.stderr and "must be one of debug, info" in done.stderr
    assert "Traceback" not in done.stderr and "ValueError" not in done.stderr
    assert not (tmp_path / "s.db").exists()
