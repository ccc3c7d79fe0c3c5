"""An MCP tool call over HTTP looked its API key up twice: once in the transport's key
check (from the key cache or off the event loop) and again, synchronously on the event
loop, when the tool worked out whose memory it acts on (``Identity.scope``; audit29's
leftover). Without a key cache (``--key-cache-seconds 0``) that was a second key-store
query per call that stalled every other request of the process meanwhile. Now the tool
takes the key the check accepted. Fails before (two lookups per call)."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx2

from memstrata import Filters, Memory, Scope
from memstrata.server import create_app
from memstrata.server.app import Limits
from memstrata.server.keys import ApiKey, SQLiteKeyStore
from server.conftest import CLOCK, native_memory, uvicorn_on


class CountingKeys(SQLiteKeyStore):
    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.lookups: list[str] = []  # the thread each lookup ran on

    def authenticate(self, secret: str) -> ApiKey | None:
        self.lookups.append(threading.current_thread().name)
        return super().authenticate(secret)


def _call(url: str, secret: str, user: str, rid: int) -> httpx2.Response:
    headers = {"Authorization": f"Bearer {secret}", "X-Memstrata-User": user}
    headers |= {"Accept": "application/json, text/event-stream"}
    body = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": "memory_add", "arguments": {"content": f"I keep bees {rid}"}},
    }
    return httpx2.post(f"{url}/mcp", json=body, headers=headers, timeout=30)


def test_a_tool_call_looks_its_key_up_once(tmp_path: Path) -> None:
    db = tmp_path / "server.db"
    keys = CountingKeys(str(db))
    secret = keys.create("acme").secret
    bound = keys.create("acme", user="bob").secret  # bob's key naming alice: a caller
    native = native_memory(db)
    app = create_app(native, keys, limits=Limits(rate=0), on_close=native.aclose)
    with uvicorn_on(app) as url:
        keys.lookups.clear()
        for rid in range(3):
            r = _call(url, secret, "alice", rid)
            assert r.status_code == 200 and not r.json()["result"]["isError"], r.text
        assert len(keys.lookups) == 3, keys.lookups
        assert all(t.startswith("AnyIO worker") for t in keys.lookups), keys.lookups  # off loop
        r = _call(url, bound, "alice", 9)  # still a caller: reads only, writes refused
        assert r.json()["result"]["isError"], r.text
        r = _call(url, "ms_not_a_key", "alice", 10)
        assert r.status_code == 401
    keys.close()
    mem = Memory(f"sqlite:///{db}", embedder="hashing", background=False, clock=CLOCK)
    try:
        texts = sorted(r.text for r in mem.list(Scope("acme", "alice"), filters=Filters()))
        assert texts == [f"I keep bees {i}" for i in range(3)]
    finally:
        mem.close()
