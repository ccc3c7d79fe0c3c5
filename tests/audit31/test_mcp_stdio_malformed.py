"""Malformed JSON-RPC over the MCP stdio transport.

Over HTTP the MCP endpoint answers every message it cannot take: a parse error (-32700),
an invalid request (a batch array, a message that is no object, ``"jsonrpc": "1.0"``:
the SDK's error), an id that is no string or integer (-32600, ``server._refused_request``,
session 29). Over stdio the same lines got no answer at all: the SDK's stdio reader drops
a line it cannot parse or validate, so a client that sent a request with the id ``1.5``,
or a line cut by its own bug, waited for an answer that never came. Left for
``mcp_server/stdio.py`` (ops31's this session): ``CheckedLines`` answers what the SDK
would drop (not JSON: -32700 with id null; JSON that is no request, notification or
response, or a request whose id is of another type: -32600), as ``/mcp`` does."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from stdio_mcp import StdioServer

LIST = b'{"jsonrpc":"2.0","id":%s,"method":"tools/list"}'
MALFORMED = [
    b"{not json",
    b"[" + LIST % b"1" + b"," + LIST % b"2" + b"]",  # a batch: MCP has none since 2025-06-18
    b"[]",
    b"5",
    LIST % b"1.5",
    LIST % b"null",
    LIST % b"[3]",
    b'{"jsonrpc":"1.0","id":11,"method":"tools/list"}',
]


def test_every_malformed_line_is_answered(tmp_path: Path) -> None:
    server = StdioServer(tmp_path / "stdio.db")  # the initialize handshake: its answer first
    got: list[dict[str, Any]] = [server.init_answer or {}]
    try:
        server.send(b"\n".join([*MALFORMED, LIST % b"12"]) + b"\n")
        while not any(a.get("id") == 12 for a in got):  # the last line's answer
            got.append(server.answer())
        time.sleep(1.0)
        while not server.answers.empty():
            got.append(server.answer())
    finally:
        server.close()
    errors = [a["error"]["code"] for a in got if "error" in a]
    assert errors.count(-32700) == 1 and errors.count(-32600) + errors.count(-32602) == 7, got
