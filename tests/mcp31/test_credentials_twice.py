"""A request that carries two API keys (``Authorization`` or ``X-API-Key`` given twice: a
client's and a proxy's, say) is refused: which key, and so which tenant, is meant cannot be
known. Before session 31 ``/mcp`` acted with the last key and the HTTP API with the first:
the same request wrote into two different tenants depending on the path."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from memstrata import Memory, Scope
from memstrata.server.keys import SQLiteKeyStore
from serving import serve


def _send(
    address: tuple[str, int], target: str, headers: list[tuple[str, str]], body: bytes
) -> bytes:
    head = [
        ("Host", f"{address[0]}:{address[1]}"),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Content-Length", str(len(body))),
        ("Connection", "close"),
        *headers,
    ]
    request = f"POST {target} HTTP/1.1\r\n".encode()
    request += "".join(f"{k}: {v}\r\n" for k, v in head).encode() + b"\r\n" + body
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(request)
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
    return out


def _mcp_add(content: str) -> bytes:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "memory_add", "arguments": {"content": content}}}  # fmt: skip
    return json.dumps(call).encode()


@pytest.fixture
def two_tenants(tmp_path: Path) -> tuple[Path, str, str]:
    db = tmp_path / "k.db"
    keys = SQLiteKeyStore(str(db))
    acme, globex = keys.create("acme").secret, keys.create("globex").secret
    keys.close()
    return db, acme, globex


def _stored(db: Path) -> list[str]:
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        return [r.content.raw for t in ("acme", "globex") for r in mem.list(Scope(t, "alice"))]


@pytest.mark.parametrize("name", ["Authorization", "X-API-Key"])
def test_mcp_refuses_two_keys(
    tmp_path: Path, two_tenants: tuple[Path, str, str], name: str
) -> None:
    db, acme, globex = two_tenants
    value = (lambda k: f"Bearer {k}") if name == "Authorization" else (lambda k: k)
    headers = [(name, value(acme)), (name, value(globex)), ("X-Memstrata-User", "alice")]
    with serve(f"sqlite:///{db}", tmp_path, "--rate-limit", "0") as server:
        answer = _send(server.address, "/mcp", headers, _mcp_add("two keys"))
    assert answer.startswith(b"HTTP/1.1 401"), answer
    assert b"given twice" in answer and b"send one API key" in answer, answer
    assert _stored(db) == []


@pytest.mark.parametrize("name", ["Authorization", "X-API-Key"])
def test_the_http_api_refuses_two_keys(
    tmp_path: Path, two_tenants: tuple[Path, str, str], name: str
) -> None:
    """The HTTP API took the first of two keys (the lead, session 31: server/auth.py)."""
    db, acme, globex = two_tenants
    value = (lambda k: f"Bearer {k}") if name == "Authorization" else (lambda k: k)
    headers = [(name, value(acme)), (name, value(globex))]
    body = json.dumps({"content": "two keys"}).encode()
    with serve(f"sqlite:///{db}", tmp_path, "--rate-limit", "0") as server:
        answer = _send(server.address, "/v1/users/alice/memories", headers, body)
    assert _stored(db) == [] and answer.startswith(b"HTTP/1.1 401"), answer
    assert b"given twice" in answer and b"send one API key" in answer, answer
