"""Clients that stall, against a real ``memstrata serve`` (and ``memstrata mcp --transport
http``): each is cut at its deadline and its descriptor freed, while a slow upload that moves
goes on (server/slow_clients.py).

Before session 22 uvicorn had no deadline for a request's headers or body: every stalled
connection kept its descriptor (and, mid-body, a request task) until the client left; 300
of them held 300 descriptors as long as they liked.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import httpx2

from memstrata.server.keys import SQLiteKeyStore
from serving import Running, mcp_http, serve

DEADLINES = ("--header-timeout", "1", "--body-timeout", "1")


def _key(db: Path, role: str = "member") -> str:
    keys = SQLiteKeyStore(str(db))
    try:
        return keys.create("acme", role=role).secret
    finally:
        keys.close()


def _fds(s: Running) -> int:
    return len(os.listdir(f"/proc/{s.proc.pid}/fd"))


def _stalled(address: tuple[str, int], kind: str, key: str, path: bytes) -> socket.socket:
    sock = socket.create_connection(address, timeout=10)
    host = f"Host: {address[0]}:{address[1]}\r\n".encode()
    if kind == "half headers":
        sock.sendall(b"POST " + path + b" HTTP/1.1\r\n" + host + b"X-Slow: ")
    elif kind == "half body":
        sock.sendall(
            b"POST " + path + b" HTTP/1.1\r\n" + host
            + f"Authorization: Bearer {key}\r\n".encode()
            + b"Content-Type: application/json\r\nAccept: application/json, text/event-stream"
            + b'\r\nContent-Length: 100\r\n\r\n{"content": "ha'
        )  # fmt: skip
    return sock  # "silent": connected, nothing sent


def _answer(sock: socket.socket) -> str:
    """The status the server sent before it closed, or "closed" (nothing sent)."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data.split(b" ")[1].decode() if data else "closed"


def _cut_at_deadline(s: Running, key: str, path: bytes) -> None:
    before = _fds(s)
    kinds = ("silent", "half headers", "half body") * 10
    socks = [_stalled(s.address, kind, key, path) for kind in kinds]
    try:
        time.sleep(0.3)
        assert _fds(s) >= before + len(socks) - 3  # each held a descriptor
        answers: dict[str, set[str]] = {}
        for sock, kind in zip(socks, kinds, strict=True):
            answers.setdefault(kind, set()).add(_answer(sock))
    finally:
        for sock in socks:
            sock.close()
    assert answers == {"silent": {"closed"}, "half headers": {"408"}, "half body": {"408"}}
    deadline = time.monotonic() + 5
    while _fds(s) > before + 1:
        assert time.monotonic() < deadline, (before, _fds(s))
        time.sleep(0.1)


def test_stalled_clients_are_cut_and_their_descriptors_freed(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    key = _key(db)
    with serve(f"sqlite:///{db}", tmp_path, "--rate-limit", "0", "--no-mcp", *DEADLINES) as s:
        t0 = time.monotonic()
        _cut_at_deadline(s, key, b"/v1/users/alice/memories")
        assert time.monotonic() - t0 < 4  # 1 s deadlines; nothing waited for anything else
        with httpx2.Client(base_url=s.url, headers={"Authorization": f"Bearer {key}"}) as c:
            r = c.post("/v1/users/alice/memories", json={"content": "after them"})
            assert r.status_code == 201, r.text
            # a 408 is what the access log and the metrics record, not the app's answer
            metrics = c.get("/metrics").text
        assert 'status="408"' in metrics
    log = s.log_text()
    assert "Traceback" not in log and '"level": "error"' not in log, log[-3000:]


def test_mcp_over_http_cuts_stalled_clients(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    key = _key(db)
    with mcp_http(f"sqlite:///{db}", tmp_path, *DEADLINES) as m:
        _cut_at_deadline(m, key, b"/mcp")
    assert "Traceback" not in m.log_text(), m.log_text()[-3000:]


def test_a_stalled_import_is_cut_quietly(tmp_path: Path) -> None:
    """The import reads its body as it comes (streamed to disk): a stall is a 408, and the
    import's task, which sees the client gone, ends without an error in the log."""
    db = tmp_path / "i.db"
    key = _key(db, role="admin")
    body = _export(50, 500)
    with serve(f"sqlite:///{db}", tmp_path, "--rate-limit", "0", "--no-mcp", *DEADLINES) as s:
        sock = socket.create_connection(s.address, timeout=10)
        with sock:
            sock.sendall(
                b"POST /v1/users/bob/import HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + f"Authorization: Bearer {key}\r\nContent-Length: {len(body)}\r\n".encode()
                + b"Content-Type: application/x-ndjson\r\n\r\n"
                + body[: len(body) // 2]
            )
            assert _answer(sock) == "408"
        with httpx2.Client(base_url=s.url, headers={"Authorization": f"Bearer {key}"}) as c:
            assert c.get("/v1/users/bob/memories").json()["items"] == []  # nothing imported
    log = s.log_text()
    assert "Traceback" not in log and '"level": "error"' not in log, log[-3000:]


def _export(records: int, size: int) -> bytes:
    """An export of ``records`` notes of ``size`` bytes each, as `memstrata export` writes."""
    header = {"format": "memstrata.export", "version": 2, "embedding_model": "hashing-256",
              "dims": 256, "exported_at": "2026-11-27T00:00:00+00:00"}  # fmt: skip
    lines = [json.dumps(header)]
    for i in range(records):
        text = f"note {i} " + "lorem ipsum dolor sit amet " * (size // 27)
        lines.append(json.dumps({"record": {
            "id": f"{i:032x}", "tenant": "acme", "user": "alice", "type": "note",
            "content": {"raw": text, "summary": None, "structured": {}},
            "created_at": "2026-11-01T00:00:00+00:00", "updated_at": "2026-11-01T00:00:00+00:00",
            "observed_at": "2026-11-01T00:00:00+00:00"}, "embedding": None}))  # fmt: skip
    lines.append(json.dumps({"end": "complete", "count": records}))
    return ("\n".join(lines) + "\n").encode()


def test_a_slow_upload_that_moves_is_not_cut(tmp_path: Path) -> None:
    """An import body sent over 2 s in pieces 0.25 s apart, with a 1 s body deadline: each
    pause is under it, the whole is twice over it; it is imported whole."""
    db = tmp_path / "u.db"
    key = _key(db, role="admin")
    body = _export(400, 2000)  # about 0.9 MB
    step = len(body) // 8 + 1
    pieces = [body[i : i + step] for i in range(0, len(body), step)]

    def slowly() -> object:
        for piece in pieces:
            yield piece
            time.sleep(0.25)

    with serve(f"sqlite:///{db}", tmp_path, "--rate-limit", "0", "--no-mcp", *DEADLINES) as s:
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/x-ndjson",
                   "Content-Length": str(len(body))}  # fmt: skip
        t0 = time.monotonic()
        r = httpx2.post(f"{s.url}/v1/users/bob/import", content=slowly(), headers=headers,
                        timeout=60)  # fmt: skip
        assert time.monotonic() - t0 > 1.9
        assert r.status_code == 200, r.text
        assert r.json()["imported"] == 400
