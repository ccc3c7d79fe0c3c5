"""Clients that leave in the middle of a large export, or stop reading it, beside clients
that are served: nothing leaks — the server's file descriptors and its PostgreSQL
connections come back to what they were (an export reads its pages in one snapshot
transaction on a pooled connection; one left open per cut export would drain the pool)."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import httpx2
import psycopg

from memstrata.server.keys import open_key_store
from serving import serve

from .conftest import OwnPostgres


def _backends(admin_url: str) -> dict[str, int]:
    """The server's client connections by state, ours left out."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT coalesce(state, '?'), count(*) FROM pg_stat_activity WHERE "
            "backend_type = 'client backend' AND pid <> pg_backend_pid() GROUP BY 1"
        ).fetchall()
    return {str(state): int(n) for state, n in rows}


def _export_request(address: tuple[str, int], key: str) -> socket.socket:
    sock = socket.create_connection(address, timeout=30)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    head = f"GET /v1/users/alice/export HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
    sock.sendall(head.encode() + b"\r\n")
    assert sock.recv(4096).startswith(b"HTTP/1.1 200")
    return sock


def test_cut_and_stalled_exports_leak_no_descriptor_and_no_connection(
    own_pg: OwnPostgres, tmp_path: Path
) -> None:
    url = own_pg.url()
    keys = open_key_store(url)
    key = keys.create("acme", role="admin").secret
    keys.close()
    with serve(url, tmp_path, "--rate-limit", "0", "--no-mcp", "--no-background") as s:
        address = s.address
        headers = {"Authorization": f"Bearer {key}"}
        with httpx2.Client(base_url=s.url, headers=headers, timeout=30) as c:
            filler = "lorem ipsum dolor sit amet " * 20
            for b in range(15):  # 1,500 turns: an export of about 2 MB
                turns = [{"role": "user", "content": f"{b}.{i} {filler}"} for i in range(100)]
                r = c.post(
                    f"/v1/users/alice/sessions/s{b}/messages/batch", json={"messages": turns}
                )
                assert r.status_code == 201, r.text
            with c.stream("GET", "/v1/users/alice/export") as whole:
                assert sum(len(x) for x in whole.iter_bytes()) > 1_000_000
            fds = len(os.listdir(f"/proc/{s.proc.pid}/fd"))
            for _ in range(20):  # read the head, then hang up
                _export_request(address, key).close()
                time.sleep(0.05)  # the server sees the hang-up before the next one comes
            stalled = _export_request(address, key)  # ... or stop reading
            try:
                for i in range(5):  # the others are served meanwhile
                    assert (
                        c.post("/v1/users/alice/search", json={"query": "lorem"}).status_code == 200
                    )
                    w = c.post("/v1/users/alice/memories", json={"content": f"w {i}"})
                    assert w.status_code == 201, w.text
            finally:
                stalled.close()
            deadline = time.monotonic() + 10
            while True:
                now_fds = len(os.listdir(f"/proc/{s.proc.pid}/fd"))
                backends = _backends(own_pg.admin_url)
                settled = "idle in transaction" not in backends and "active" not in backends
                if settled and now_fds <= fds + 2:
                    break
                assert time.monotonic() < deadline, (fds, now_fds, backends)
                time.sleep(0.2)
            # within the pools' sizes (store 8, API keys 4), not one per export
            assert sum(backends.values()) <= 12, backends
            assert c.get("/v1/users/alice/memories").status_code == 200
        # Session 22: a cut export stops between two pages and gives its connection back
        # clean. Before, it was cancelled mid-query: psycopg's cancel request was cancelled
        # again (anyio's cancel scope) and it closed the connection, with a warning each
        # ("query cancellation interrupted", "discarding closed connection").
        log = s.log_text()
        assert "cancellation interrupted" not in log and "discarding" not in log, log[-2000:]
