"""``memstrata worker`` run continuously prints one line per run that claimed jobs (its
time, then the counts ``worker --once`` reports; with ``--json`` a JSON object a line) and
nothing for the polls that found none; ``--quiet`` prints no line per run. Before session
25 it printed its start line and then nothing, whatever it ran."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from memstrata import Memory, Scope

ME = Scope("t", "u", session="s1")


def _queue_work(db: Path, text: str) -> None:
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        mem.add_message(ME, "user", text)
        assert mem.store.list_jobs("t", "u", status="pending")


def _start(db: Path, *flags: str) -> tuple[subprocess.Popen[str], list[str]]:
    args = ["--db", f"sqlite:///{db}", "--tenant", "t", "--user", "u", "--embedder", "hashing"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "memstrata", *args, "worker", "--poll", "0.05", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    lines: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))

    threading.Thread(target=read, daemon=True).start()
    return proc, lines


def _wait(check: object, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


STARTED = "memstrata worker starting: store "  # on stderr since session 33 (ops33)


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    return err


def _pending(db: Path) -> int:
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        return len(mem.store.list_jobs("t", "u", status="pending"))


def test_one_line_per_run_that_did_work_none_for_idle_polls(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    _queue_work(db, "I keep bees in my garden")
    proc, lines = _start(db)
    try:
        runs = lambda: [x for x in lines if " jobs run: " in x]  # noqa: E731
        _wait(lambda: len(runs()) == 1)
        first = runs()[0]
        assert first.startswith("20") and first.split()[0].endswith("Z"), first
        assert "claimed " in first and "done " in first and "failed 0" in first, first
        time.sleep(1.0)  # ~20 idle polls: no line
        assert len(runs()) == 1, lines
        _queue_work(db, "My sister is Ana")
        _wait(lambda: len(runs()) == 2)
        assert _pending(db) == 0
    finally:
        err = _stop(proc)
    assert STARTED in err  # on stderr: stdout has the runs only
    assert len(lines) == 2, lines  # one a run, nothing else


def test_json_lines_and_quiet(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    _queue_work(db, "I keep bees in my garden")
    proc, lines = _start(db, "--json")
    try:
        _wait(lambda: len(lines) == 1)
        run = json.loads(lines[0])
        assert run["claimed"] >= 1 and run["claimed"] == run["done"], run
        assert run["errors"] == [] and run["at"].endswith("Z"), run
        time.sleep(0.5)
        assert len(lines) == 1, lines
    finally:
        err = _stop(proc)
    assert STARTED in err  # on stderr: stdout is JSON Lines

    _queue_work(db, "My sister is Ana")
    proc, lines = _start(db, "--quiet")
    try:
        _wait(lambda: _pending(db) == 0)
        time.sleep(0.3)
    finally:
        err = _stop(proc)
    assert STARTED in err
    assert lines == [], lines
