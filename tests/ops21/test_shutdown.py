"""SIGTERM to ``memstrata serve`` while clients write: the process exits within a bounded
time and every write it acknowledged is in the store.

Before session 21 uvicorn waited for every open connection with no limit: one client that
had sent half a body (or read an export slowly) kept the process up — still running 60 s
after the signal. ``--shutdown-timeout`` (default 20 s) bounds that wait; requests still
running then are cancelled, and a cancelled write is rolled back, never acknowledged.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from pathlib import Path

import httpx2

from memstrata import Memory, Scope
from memstrata.server.keys import SQLiteKeyStore
from serving import mcp_http, serve


def test_sigterm_with_a_stalled_client_exits_in_bounded_time_keeping_every_2xx(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    keys = SQLiteKeyStore(str(db))
    key = keys.create("acme").secret
    keys.close()
    acked: list[str] = []
    answers: list[int] = []
    with serve(
        f"sqlite:///{db}", tmp_path, "--rate-limit", "0", "--no-mcp", "--shutdown-timeout", "2"
    ) as s:
        stop = threading.Event()

        def writer(n: int) -> None:
            headers = {"Authorization": f"Bearer {key}"}
            with httpx2.Client(base_url=s.url, headers=headers, timeout=30) as c:
                i = 0
                while not stop.is_set():
                    note = {"content": f"writer {n} note {i}", "dedup": False}
                    try:
                        r = c.post("/v1/users/alice/memories", json=note)
                    except httpx2.HTTPError:  # refused or cut: the process is stopping
                        return
                    answers.append(r.status_code)
                    if r.status_code == 201:
                        acked.append(r.json()["id"])
                    i += 1

        stalled = socket.create_connection(s.address, timeout=30)
        stalled.sendall(
            b"POST /v1/users/alice/memories HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: Bearer {key}\r\n".encode()
            + b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"content": "ha'
        )
        threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
        for t in threads:
            t.start()
        try:
            time.sleep(1.0)
            t0 = time.monotonic()
            os.killpg(s.proc.pid, signal.SIGTERM)
            try:
                s.proc.wait(timeout=15)
            finally:
                took = time.monotonic() - t0
                stop.set()
                for t in threads:
                    t.join(30)
        finally:
            stalled.close()
        assert s.proc.returncode is not None
        assert took < 10, f"exited {took:.1f} s after SIGTERM; log: {s.log_text()[-2000:]}"
    assert len(acked) > 5 and set(answers) <= {201, 503}, sorted(set(answers))
    mem = Memory(f"sqlite:///{db}", embedder="hashing", background=False)
    try:
        scope = Scope("acme", "alice")
        for rid in acked:  # NotFoundError if an acknowledged write was lost
            assert mem.get(scope, rid).id == rid
    finally:
        mem.close()


def test_mcp_over_http_exits_on_sigterm_beside_a_stalled_client(tmp_path: Path) -> None:
    """``memstrata mcp --transport http`` is uvicorn too: the same unbounded wait before."""
    db = tmp_path / "m.db"
    keys = SQLiteKeyStore(str(db))
    key = keys.create("acme").secret
    keys.close()
    with mcp_http(f"sqlite:///{db}", tmp_path, "--shutdown-timeout", "2") as m:
        stalled = socket.create_connection(m.address, timeout=30)
        stalled.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: Bearer {key}\r\n".encode()
            + b"Content-Type: application/json\r\nAccept: application/json, text/event-stream"
            + b'\r\nContent-Length: 100\r\n\r\n{"jsonrpc": "2.0", '
        )
        time.sleep(0.3)
        t0 = time.monotonic()
        try:
            m.stop(timeout=15)
        finally:
            stalled.close()
        assert time.monotonic() - t0 < 10, m.log_text()[-2000:]
