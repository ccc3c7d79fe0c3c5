"""Issue 8 §1: a message, its index entries and its ingest job commit in one transaction.

A writer process killed with SIGKILL at any point never leaves a message that no job will
process (before: ``add_messages`` committed the message, then enqueued the job separately).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

_CHILD = textwrap.dedent("""
    import os, signal, sys
    from memstrata import Memory, Scope
    path, mode = sys.argv[1], sys.argv[2]
    mem = Memory(f"sqlite:///{path}", embedder="hashing", background=False)
    scope = Scope("t", "u", session="s")
    if mode == "kill-at-enqueue":
        # die exactly between writing the message and writing its job
        import memstrata.store.sqlite.outbox as outbox
        def die(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)
        outbox.enqueue = die
        mem.add_message(scope, "user", "this message must not be left without its job")
    else:
        n = 0
        while True:
            n += 1
            mem.add_message(scope, "user", f"message number {n} about the trip to Lisbon")
            if n == 1:  # the layers are built on the first write: ready once one committed
                print("ready", flush=True)
""")


def _orphans(path: Path) -> tuple[int, int]:
    """(messages, messages that no ingest job names)."""
    conn = sqlite3.connect(path)
    try:
        ids = {r[0] for r in conn.execute("SELECT id FROM records WHERE type = 'message'")}
        named: set[str] = set()
        for (payload,) in conn.execute("SELECT payload FROM jobs WHERE kind = 'ingest'"):
            named.update(json.loads(payload)["ids"])
    finally:
        conn.close()
    return len(ids), len(ids - named)


def _run(path: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(path), mode],
        stdout=subprocess.PIPE if mode == "loop" else subprocess.DEVNULL,
        text=True,
    )


def test_kill_between_message_and_job_leaves_no_orphan(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    child = _run(path, "kill-at-enqueue")
    assert child.wait(timeout=120) == -signal.SIGKILL
    messages, orphans = _orphans(path)
    assert orphans == 0, f"{orphans} of {messages} messages have no ingest job"
    assert messages == 0  # the whole transaction was rolled back


@pytest.mark.parametrize("delay", [0.3, 0.7, 1.1])
def test_kill_at_a_random_moment_leaves_no_orphan(tmp_path: Path, delay: float) -> None:
    path = tmp_path / "m.db"
    child = _run(path, "loop")
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    time.sleep(delay)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    child.stdout.close()
    messages, orphans = _orphans(path)
    assert messages > 0 and orphans == 0, (messages, orphans)
