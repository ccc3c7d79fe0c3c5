"""A request that asks to upgrade (``Connection: Upgrade`` with ``Upgrade: h2c`` or
``websocket``) and carries a body is served as the HTTP/1.1 request it also is: nothing
here upgrades, and RFC 9110 (7.8) lets a server ignore ``Upgrade``. The connection goes on
serving the requests that follow it.

Before session 24 the body was dropped: the parser, told an upgrade was coming, took the
bytes after the head for the other protocol; the app saw an empty body (a 422) and the
connection then waited, the body's bytes gone, for its keep-alive timeout (75 s). A body
sent after the head, in a later packet, was read as a new request (a 400)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from memstrata.server.keys import SQLiteKeyStore
from serving import Running, serve

MEMORIES = b"/v1/users/alice/memories"
UPGRADES = {
    "h2c": b"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\n",
    "websocket": b"Connection: Upgrade\r\nUpgrade: websocket\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n",
    "keep-alive and upgrade": b"Connection: keep-alive, Upgrade\r\nUpgrade: h2c\r\n",
}
WAIT_S = 10.0  # far below the keep-alive timeout the connection waited for before


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Running, str]]:
    tmp = tmp_path_factory.mktemp("upgrade")
    db = tmp / "u.db"
    keys = SQLiteKeyStore(str(db))
    key = keys.create("acme", role="admin").secret
    keys.close()
    with serve(f"sqlite:///{db}", tmp, "--rate-limit", "0", "--no-mcp") as s:
        yield s, key
    log = s.log_text()
    assert "Traceback" not in log and '"level": "error"' not in log, log[-3000:]
    assert '"level": "warning"' not in log, log[-3000:]


def _head(method: bytes, key: str, extra: bytes = b"", length: int | None = None) -> bytes:
    head = method + b" " + MEMORIES + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    head += f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n".encode()
    if length is not None:
        head += b"Content-Length: %d\r\n" % length
    return head + extra + b"\r\n"


def _post(key: str, content: str, extra: bytes) -> tuple[bytes, bytes]:
    body = json.dumps({"content": content}).encode()
    return _head(b"POST", key, extra, len(body)), body


def _read_answer(sock: socket.socket, buffered: bytes = b"") -> tuple[int, Any, bytes]:
    """One answer (status, JSON body) and what came after it."""
    data = buffered
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed before an answer: {data!r}"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    size = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    while len(rest) < size:
        chunk = sock.recv(65536)
        assert chunk, f"closed mid-answer: {head!r}"
        rest += chunk
    return status, json.loads(rest[:size]), rest[size:]


def _listed(sock: socket.socket, key: str, buffered: bytes = b"") -> list[str]:
    sock.sendall(_head(b"GET", key))
    status, body, _ = _read_answer(sock, buffered)
    assert status == 200, body
    return [item["content"]["raw"] for item in body["items"]]


@pytest.mark.parametrize("upgrade", list(UPGRADES))
def test_a_post_asking_to_upgrade_is_served_and_the_connection_goes_on(
    server: tuple[Running, str], upgrade: str
) -> None:
    s, key = server
    content = f"asked to upgrade to {upgrade}, in one packet"
    with socket.create_connection(s.address, timeout=WAIT_S) as sock:
        head, body = _post(key, content, UPGRADES[upgrade])
        started = time.monotonic()
        sock.sendall(head + body)
        status, answer, rest = _read_answer(sock)
        assert status == 201 and answer["content"]["raw"] == content, answer
        assert content in _listed(sock, key, rest)  # the same connection, served at once
        assert time.monotonic() - started < WAIT_S


def test_a_body_sent_after_the_head_is_read_as_the_body(server: tuple[Running, str]) -> None:
    s, key = server
    content = "asked to upgrade, the body in a later packet"
    with socket.create_connection(s.address, timeout=WAIT_S) as sock:
        head, body = _post(key, content, UPGRADES["h2c"])
        sock.sendall(head + body[:5])
        time.sleep(0.2)
        sock.sendall(body[5:])
        status, answer, rest = _read_answer(sock)
        assert status == 201 and answer["content"]["raw"] == content, answer
        assert content in _listed(sock, key, rest)


def test_a_chunked_body_and_a_pipelined_request_are_served(server: tuple[Running, str]) -> None:
    s, key = server
    content = "asked to upgrade, chunked, then a second request in the same packet"
    body = json.dumps({"content": content}).encode()
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    head = _head(b"POST", key, UPGRADES["websocket"] + b"Transfer-Encoding: chunked\r\n")
    with socket.create_connection(s.address, timeout=WAIT_S) as sock:
        sock.sendall(head + chunked + _head(b"GET", key))
        status, answer, rest = _read_answer(sock)
        assert status == 201 and answer["content"]["raw"] == content, answer
        status, listed, _ = _read_answer(sock, rest)
        assert status == 200 and content in [i["content"]["raw"] for i in listed["items"]], listed


def test_a_post_asking_to_upgrade_and_to_close_is_served_then_closed(
    server: tuple[Running, str],
) -> None:
    s, key = server
    content = "asked to upgrade and to close"
    with socket.create_connection(s.address, timeout=WAIT_S) as sock:
        head, body = _post(key, content, UPGRADES["h2c"] + b"Connection: close\r\n")
        sock.sendall(head + body)
        status, answer, rest = _read_answer(sock)
        assert status == 201 and answer["content"]["raw"] == content, answer
        assert rest == b"" and sock.recv(65536) == b""  # closed, as asked (not timed out)
