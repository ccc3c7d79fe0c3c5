"""Raw-socket helpers for the hostile-client tests: a request as bytes, the answer as the
server sent it (status, headers, body; "closed" when it sent nothing)."""

from __future__ import annotations

import json
import select
import socket
from dataclasses import dataclass
from typing import Any

__all__ = ["Answer", "closed_by_server", "exchange", "read_until_closed", "request"]


def request(
    method: str,
    target: bytes,
    key: str = "",
    body: bytes = b"",
    *,
    extra: bytes = b"",
    length: bool = True,
    version: bytes = b"HTTP/1.1",
    host: bool = True,
    close: bool = True,
) -> bytes:
    head = method.encode() + b" " + target + b" " + version + b"\r\n"
    if host:
        head += b"Host: 127.0.0.1\r\n"
    if key:
        head += f"Authorization: Bearer {key}\r\n".encode()
    head += b"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
    if length:
        head += b"Content-Length: %d\r\n" % len(body)
    if close:
        head += b"Connection: close\r\n"
    return head + extra + b"\r\n" + body


@dataclass
class Answer:
    raw: bytes

    @property
    def status(self) -> str:
        return self.raw.split(b" ", 2)[1].decode() if self.raw else "closed"

    @property
    def head(self) -> bytes:
        return self.raw.partition(b"\r\n\r\n")[0].lower()

    @property
    def body(self) -> bytes:
        return self.raw.partition(b"\r\n\r\n")[2]

    def json(self) -> Any:
        assert b"content-type: application/json" in self.head, self.raw[:500]
        size = int(self.head.split(b"content-length: ")[1].split(b"\r\n")[0])
        return json.loads(self.body[:size])

    def error_code(self) -> str:
        return str(self.json()["error"]["code"])


def exchange(
    address: tuple[str, int], data: bytes, *, shut: bool = False, timeout: float = 30
) -> Answer:
    """Send ``data``, then read until the server closes (``shut``: half-close first, as a
    client that has nothing more to send)."""
    with socket.create_connection(address, timeout=timeout) as sock:
        try:
            sock.sendall(data)
            if shut:
                sock.shutdown(socket.SHUT_WR)
        except OSError:  # the server answered and closed before taking it all
            pass
        return Answer(read_until_closed(sock))


def read_until_closed(sock: socket.socket) -> bytes:
    """What the server sends until it closes the connection (a reset ends it too)."""
    out = b""
    try:
        while chunk := sock.recv(65536):
            out += chunk
    except ConnectionResetError:
        pass
    return out


def closed_by_server(socks: list[socket.socket]) -> list[socket.socket]:
    """Those of ``socks`` the server has closed (each readable one is read at once, a byte:
    a header deadline must not close more meanwhile; pass the others on)."""
    readable, _, _ = select.select(socks, [], [], 0.5)
    closed = []
    for sock in readable:
        try:
            if sock.recv(1) == b"":
                closed.append(sock)
        except ConnectionResetError:
            closed.append(sock)
    return closed
