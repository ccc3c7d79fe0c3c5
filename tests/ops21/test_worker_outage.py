"""``memstrata worker`` while its PostgreSQL goes away and comes back: it says so, waits
(a pause doubling up to 30 s, stopped at once by SIGTERM) and runs the jobs queued
meanwhile once the store answers. Before session 25 the first failed poll ended the
worker with a traceback, and its jobs waited for someone to start it again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

from memstrata import Memory, Scope

from .conftest import OwnPostgres

ME = Scope("t", "u", session="s1")


def _queue_work(url: str, text: str) -> None:
    with Memory(url, embedder="hashing", background=False) as mem:
        mem.add_message(ME, "user", text)


def _lines(stream: object, into: list[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        into.append(line.rstrip("\n"))


def _wait(check: object, seconds: float, what: str, out: list[str], err: list[str]) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"no {what} in {seconds} s: {out[-5:]} {err[-5:]}"
        time.sleep(0.1)


def test_the_worker_rides_out_a_postgres_restart(own_pg: OwnPostgres) -> None:
    url = own_pg.url()
    _queue_work(url, "I moved to Lisbon in May")
    args = ["--db", url, "--tenant", "t", "--user", "u", "--embedder", "hashing"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "memstrata", *args, "worker", "--poll", "0.2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    out: list[str] = []
    err: list[str] = []
    readers = [
        threading.Thread(target=_lines, args=(stream, into), daemon=True)
        for stream, into in ((proc.stdout, out), (proc.stderr, err))
    ]
    for reader in readers:
        reader.start()
    try:
        runs = lambda: sum("jobs run: claimed" in x for x in out)  # noqa: E731
        _wait(lambda: runs() >= 1, 60, "first run", out, err)
        own_pg.stop("fast")
        try:
            warned = lambda: any("the store did not answer" in x for x in err)  # noqa: E731
            _wait(lambda: warned() or proc.poll() is not None, 60, "warning", out, err)
            time.sleep(1)
            assert proc.poll() is None, f"the worker exited ({proc.returncode}): {err[-20:]}"
        finally:
            own_pg.start()
        _queue_work(url, "My sister Ana lives in Porto")
        _wait(lambda: runs() >= 2, 60, "run after the restart", out, err)
        assert any("the store answers again" in x for x in err), err[-10:]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        for reader in readers:
            reader.join(10)  # to the end of its stream
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert proc.returncode == 0, err[-20:]
