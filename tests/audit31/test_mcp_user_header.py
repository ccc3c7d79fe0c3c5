"""The MCP endpoint's ``X-Memstrata-User`` header as it comes off the wire.

HTTP field values carry no leading or trailing whitespace (RFC 9110 §5.5: optional
whitespace around a value is not part of it); uvicorn's httptools parser (what ``memstrata
serve`` runs) strips the leading but keeps the trailing, so ``X-Memstrata-User: dave `` (a
template's stray space) wrote into a user ``"dave "`` whose memory ``dave`` never sees
(h11 strips both: the user depended on the parser installed). The header given twice
(``alice`` by the client, ``carol`` added by a proxy) wrote into the last one, without a
word. Left for ``mcp_server/identity.py`` (ops31's this session): ``_header_text`` strips
spaces and tabs around the value, and a user or session header given twice is a tool
error (which one the sender meant cannot be known)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from memstrata import Memory, Scope
from memstrata.server.keys import SQLiteKeyStore
from serving import serve


def _post(address: tuple[str, int], headers: list[tuple[str, str]], content: str) -> bytes:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "memory_add", "arguments": {"content": content}},
        }
    ).encode()
    head = [
        ("Host", f"{address[0]}:{address[1]}"),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Content-Length", str(len(body))),
        ("Connection", "close"),
        *headers,
    ]
    request = b"POST /mcp HTTP/1.1\r\n"
    request += "".join(f"{k}: {v}\r\n" for k, v in head).encode() + b"\r\n" + body
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(request)
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
    return out


def test_the_user_header_padded_or_twice(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    keys = SQLiteKeyStore(str(db))
    admin = keys.create("acme", role="admin").secret
    keys.close()
    bearer = ("Authorization", f"Bearer {admin}")
    with serve(f"sqlite:///{db}", tmp_path, "--rate-limit", "0") as server:
        _post(server.address, [bearer, ("X-Memstrata-User", "dave  ")], "padded")
        twice = [bearer, ("X-Memstrata-User", "alice"), ("X-Memstrata-User", "carol")]
        answer = _post(server.address, twice, "twice")
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        assert [r.content.raw for r in mem.list(Scope("acme", "dave"))] == ["padded"]
        assert mem.list(Scope("acme", "carol")) == [] and mem.list(Scope("acme", "alice")) == []
    assert b'"isError":true' in answer or b'"error"' in answer, answer
