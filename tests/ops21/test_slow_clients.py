"""Clients that send half a body and stall, beside clients that are served.

``memstrata serve`` on a local store runs one user-route request at a time (reads first,
server/priority.py). Before session 21 a request took its slot before its body had arrived,
so a client that sent half a body and stalled held the slot for ``max_hold`` (0.25 s): 20
such connections stopped every other request for 4.3 s (a slow-loris costing nothing to
send). The body is now read before the slot is asked for.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import httpx2

from memstrata.server.keys import SQLiteKeyStore
from serving import serve


def _half_body(address: tuple[str, int], key: str) -> socket.socket:
    sock = socket.create_connection(address, timeout=30)
    sock.sendall(
        b"POST /v1/users/alice/memories HTTP/1.1\r\nHost: x\r\n"
        + f"Authorization: Bearer {key}\r\n".encode()
        + b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"content": "ha'
    )
    return sock


def test_stalled_half_bodies_do_not_hold_up_the_others(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    keys = SQLiteKeyStore(str(db))
    key = keys.create("acme").secret
    keys.close()
    with serve(
        f"sqlite:///{db}", tmp_path, "--rate-limit", "0", "--no-mcp"
    ) as s:  # the default: one slot here
        host, port = s.url.removeprefix("http://").split(":")
        headers = {"Authorization": f"Bearer {key}"}
        with httpx2.Client(base_url=s.url, headers=headers, timeout=30) as c:
            assert c.post("/v1/users/alice/memories", json={"content": "seed"}).status_code == 201
            stalled = [_half_body((host, port), key) for _ in range(20)]
            try:
                time.sleep(0.3)  # every stalled request has reached the server
                took = []
                for i in range(4):
                    t0 = time.monotonic()
                    w = c.post("/v1/users/alice/memories", json={"content": f"w {i}"})
                    r = c.post("/v1/users/alice/search", json={"query": "seed"})
                    took.append(time.monotonic() - t0)
                    assert (w.status_code, r.status_code) == (201, 200), (w.text, r.text)
                # 20 x 0.25 s = 5 s before; a loaded machine still answers well under 2 s
                assert max(took) < 2.0, took
            finally:
                for sock in stalled:
                    sock.close()
            # a client that finishes its body late is served as usual
            late = _half_body((host, port), key)
            try:
                time.sleep(0.5)
                late.sendall(b'lf"}' + b" " * (100 - len(b'{"content": "half"}')))
                assert late.recv(65536).split(b" ")[1] == b"201"
            finally:
                late.close()
