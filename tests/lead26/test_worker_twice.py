"""``memstrata worker`` run twice in one process (a program embedding the CLI, a test
suite): its warnings reach stderr once each. Before session 26 each run added one more
handler, so the second run printed each warning twice."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata import Memory, Scope
from memstrata.cli.app import app


@pytest.fixture
def own_signals() -> Iterator[None]:
    """The worker sets SIGTERM/SIGINT handlers and a log handler of its own: give pytest
    its own back, and leave no handler to the next tests."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    worker_log = logging.getLogger("memstrata.worker")
    handlers = list(worker_log.handlers)
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)
    worker_log.handlers[:] = handlers


def _run_worker(db: Path, word: str, capsys: pytest.CaptureFixture[str]) -> str:
    """One continuous ``worker`` that logs a warning and is stopped by SIGTERM."""

    before = signal.getsignal(signal.SIGTERM)

    def warn_then_stop() -> None:
        deadline = time.monotonic() + 60
        while signal.getsignal(signal.SIGTERM) is before:  # the worker's own handler is set
            if ended.is_set() or time.monotonic() > deadline:
                return
            time.sleep(0.02)
        logging.getLogger("memstrata.worker").warning("store gone %s", word)
        os.kill(os.getpid(), signal.SIGTERM)

    ended = threading.Event()
    timer = threading.Thread(target=warn_then_stop)
    timer.start()
    try:
        args = ["--db", f"sqlite:///{db}", "--tenant", "t", "--user", "u", "--embedder", "hashing"]
        app([*args, "worker", "--poll", "0.05", "--quiet"], standalone_mode=False)
    finally:
        ended.set()
        timer.join()
    return capsys.readouterr().err


def test_a_second_worker_run_warns_once_on_its_own_stderr(
    tmp_path: Path, own_signals: None, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "m.db"
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        mem.add_message(Scope("t", "u", session="s1"), "user", "I moved to Lisbon in May")
    first = _run_worker(db, "first", capsys)
    second = _run_worker(db, "second", capsys)
    assert first.count("store gone first") == 1, first
    assert second.count("store gone second") == 1, second
    assert "first" not in second
