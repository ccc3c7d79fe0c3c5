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

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from memstrata.server.keys import SQLiteKeyStore

SRC = str(Path(__file__).resolve().parents[2] / "src")
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
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
    db = tmp_path / "stdio.db"
    keys = SQLiteKeyStore(str(db))
    key = keys.create("acme").secret
    keys.close()
    ready = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    lines = [json.dumps(INIT).encode(), ready, *MALFORMED, LIST % b"12"]
    cmd = [sys.executable, "-m", "memstrata", "--db", f"sqlite:///{db}", "--embedder", "hashing"]
    cmd += ["--user", "alice", "mcp"]
    env = {**os.environ, "PYTHONPATH": SRC, "MEMSTRATA_API_KEY": key}
    with subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        out = proc.stdout
        answers: queue.Queue[bytes] = queue.Queue()

        def read() -> None:
            for line in out:
                answers.put(line)

        threading.Thread(target=read, daemon=True).start()
        got: list[dict[str, Any]] = []
        try:
            proc.stdin.write(b"\n".join(lines) + b"\n")
            proc.stdin.flush()
            while not any(a.get("id") == 12 for a in got):  # the last line's answer
                got.append(json.loads(answers.get(timeout=60)))
            time.sleep(1.0)
            while not answers.empty():
                got.append(json.loads(answers.get()))
        finally:
            proc.stdin.close()
            proc.wait(timeout=60)
    errors = [a["error"]["code"] for a in got if "error" in a]
    assert errors.count(-32700) == 1 and errors.count(-32600) + errors.count(-32602) == 7, got
