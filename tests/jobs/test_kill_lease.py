"""Issue 7 item 4: a worker killed with SIGKILL mid-job gives its jobs back within seconds
(short leases renewed by a heartbeat while it lived), and ``flush()`` in another process
then runs them — instead of leaving them ``running`` for a 300 s lease."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memstrata import Memory, Scope
from memstrata.records import Message, Role

SRC = str(Path(__file__).resolve().parents[2] / "src")
SCOPE = Scope("acme", "carol", session="c1")

CHILD = textwrap.dedent("""
    import json, os, signal, sys, time
    from memstrata import Memory, Scope
    from memstrata.clock import SystemClock
    from memstrata.worker import JobRunner

    url, lease = sys.argv[1], float(sys.argv[2])
    mem = Memory(url, embedder="hashing", llm="heuristic", background=False)
    scope = Scope("acme", "carol", session="c1")
    handlers = mem.layers.handlers()
    ingest = handlers["ingest"]

    def slow_then_die(job):
        print("CLAIMED", job.lease_until.isoformat(), flush=True)
        time.sleep(lease * 2)                      # the heartbeat renews meanwhile
        print("RENEWED", flush=True)
        time.sleep(60)                             # the parent kills us here

    JobRunner(mem.store, {**handlers, "ingest": slow_then_die}, SystemClock(),
              lease_seconds=lease).run_pending()
    print("UNREACHABLE", flush=True)
""")


def test_a_killed_workers_jobs_come_back_within_seconds_and_flush_runs_them(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'k.db'}"
    lease = 1.5
    turns = [
        Message(
            role=Role.USER if i % 2 == 0 else Role.ASSISTANT,
            content=f"turn {i}: I keep my bike in the garage at Elm Street {i}",
        )
        for i in range(6)
    ]
    with Memory(url, embedder="hashing", llm="heuristic", background=False) as mem:
        ids = [r.id for r in mem.add_messages(SCOPE, turns)]

    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, url, str(lease)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        claimed = proc.stdout.readline().split()
        assert claimed[0] == "CLAIMED", (claimed, proc.stderr.read() if proc.stderr else "")
        first_lease = datetime.fromisoformat(claimed[1])
        assert proc.stdout.readline().strip() == "RENEWED"
        with Memory(url, embedder="hashing", llm="heuristic", background=False) as mem:
            (held,) = mem.store.list_jobs("acme", "carol", status="running")
            assert held.lease_until is not None and held.lease_until > first_lease, (
                "the heartbeat did not renew the lease"
            )
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        killed_at = time.monotonic()
        assert proc.returncode == -signal.SIGKILL

        with Memory(url, embedder="hashing", llm="heuristic", background=False) as mem:
            (orphan,) = mem.store.list_jobs("acme", "carol", status="running")
            assert orphan.lease_until is not None
            # the last renewal was at most one heartbeat before the kill
            assert orphan.lease_until <= datetime.now(UTC) + timedelta(seconds=lease)
            report = mem.flush(SCOPE)  # waits out the dead worker's lease, then runs
            waited = time.monotonic() - killed_at
            assert (report.done, report.retried, report.failed, report.waiting) == (1, 0, 0, 0)
            assert waited < lease + 5, f"the job came back after {waited:.1f} s"
            (done,) = mem.store.list_jobs("acme", "carol", status="done")
            assert done.id == orphan.id and done.attempts == 2
            assert list(done.payload["ids"]) == ids
            assert mem.stats(SCOPE)["pending_jobs"] == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
