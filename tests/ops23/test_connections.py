"""The connection cap (``--max-connections``, server/slow_clients.py) and the body's minimum
rate (``--min-body-rate``) on a real ``memstrata serve``.

Before session 23 there was no cap: every idle or silent connection held a descriptor (and
uvicorn's ``--limit-concurrency`` would have answered 503 to real clients while attackers'
idle connections held the slots); and a body trickling a byte a second under the 60 s
pause deadline held its connection for as long as the client liked. Both options were
unknown to ``serve`` (the server did not start).
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import httpx2

from memstrata.server.keys import SQLiteKeyStore
from serving import serve

from .hostile import Answer, closed_by_server, exchange, read_until_closed, request


def _key(db: Path, role: str = "member") -> str:
    keys = SQLiteKeyStore(str(db))
    try:
        return keys.create("acme", role=role).secret
    finally:
        keys.close()


def _write(url: str, key: str) -> int:
    with httpx2.Client(headers={"Authorization": f"Bearer {key}"}, timeout=30) as client:
        r = client.post(f"{url}/v1/users/alice/memories", json={"content": "a real client"})
        return r.status_code


def test_idle_connections_make_room_for_new_ones(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    key = _key(db)
    with serve(f"sqlite:///{db}", tmp_path, "--rate-limit", "0", "--no-mcp",
               "--max-connections", "20") as s:  # fmt: skip
        idle = [socket.create_connection(s.address, timeout=10) for _ in range(30)]
        try:
            time.sleep(0.5)
            for _ in range(3):  # each a connection of its own, past the cap
                assert _write(s.url, key) == 201
            # the 10 over the cap, then one per real client (the idlest by the server's
            # clock: in a batch accepted at once, not necessarily the order they connected)
            assert 10 <= len(closed_by_server(idle)) <= 13
        finally:
            for sock in idle:
                sock.close()
    log = s.log_text()
    assert "Traceback" not in log, log[-3000:]


def test_past_the_cap_with_none_idle_a_new_connection_gets_a_json_503(tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    key = _key(db)
    with serve(f"sqlite:///{db}", tmp_path, "--rate-limit", "0", "--no-mcp",
               "--max-connections", "10", "--header-timeout", "3") as s:  # fmt: skip
        busy = [socket.create_connection(s.address, timeout=10) for _ in range(12)]
        try:
            for sock in busy:  # half a request each: not idle
                sock.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n")
            time.sleep(0.5)
            answer = exchange(s.address, request("GET", b"/readyz"))
            assert answer.status == "503" and answer.error_code() == "too_many_connections"
            assert b"retry-after: 1" in answer.head
        finally:
            for sock in busy:
                sock.close()
        # once they are gone (closed here, or cut at their header deadline) all is served
        deadline = time.monotonic() + 30
        while (status := exchange(s.address, request("GET", b"/readyz")).status) != "200":
            assert time.monotonic() < deadline, status
            time.sleep(0.2)
        assert _write(s.url, key) == 201


def test_a_trickled_import_is_cut_below_the_minimum_rate(tmp_path: Path) -> None:
    """An import body (the 64 MiB route) sent a few bytes at a time, never pausing as long
    as the body deadline: cut with a JSON 408, logged, and the others are served."""
    db = tmp_path / "t.db"
    key = _key(db, role="admin")
    options = ("--rate-limit", "0", "--no-mcp", "--body-timeout", "1", "--min-body-rate", "200",
               "--log-level", "info")  # fmt: skip
    with serve(f"sqlite:///{db}", tmp_path, *options) as s:
        sock = socket.create_connection(s.address, timeout=30)
        with sock:
            sock.sendall(
                request("POST", b"/v1/users/bob/import", key, extra=b"", length=False)
                .replace(b"Content-Type: application/json", b"Content-Type: application/x-ndjson")
                .replace(b"\r\n\r\n", b"\r\nContent-Length: 100000\r\n\r\n")
            )  # fmt: skip
            sent = 0
            try:
                while sent < 120:  # 10 bytes/s, a chunk every 0.3 s: 36 s if never cut
                    sock.sendall(b"{}\n")
                    sent += 1
                    time.sleep(0.3)
                    if sent == 3:
                        assert _write(s.url, key) == 201  # served meanwhile
            except OSError:
                pass
            answer = Answer(read_until_closed(sock))
        assert answer.status == "408" and answer.error_code() == "request_timeout"
        assert sent < 120
        assert _write(s.url, key) == 201
    log = s.log_text()
    assert "below the minimum of 200" in log, log[-3000:]
    assert "Traceback" not in log and '"level": "error"' not in log, log[-3000:]
