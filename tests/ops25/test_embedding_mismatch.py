"""A server whose store another process re-embedded (``memstrata reembed``) cannot search
it nor write to it until it is restarted with the store's embedder: over HTTP a 500
``embedding_mismatch`` without ``Retry-After``, over MCP a tool error, each saying that
retrying will not help and what to restart with. Before session 25 HTTP answered 503
``unavailable`` with ``Retry-After: 5`` (clients retried for nothing), and MCP gave the
library's "open the store again with its embedder", which a model cannot act on."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from mcp import Client

from memstrata import AsyncMemory, Memory
from memstrata.mcp_server.identity import Identity
from memstrata.mcp_server.server import build_mcp_server
from memstrata.server import create_app
from memstrata.server.app import Limits
from memstrata.server.backend import ThreadedBackend
from memstrata.server.keys import SQLiteKeyStore


def _reembed(url: str) -> None:
    """Another process's `memstrata reembed --embedder hashing:64`."""
    Memory(url, embedder="hashing:64", background=False, reembed=True).close()


SAID = {"role": "user", "content": "the heron stood by the lake"}


@contextmanager
def served(tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, str], str]]:
    """A server (in-process) on a new SQLite store holding alice's one message: its
    client, an admin key's headers and the store's URL."""
    db = tmp_path / "h.db"
    url = f"sqlite:///{db}"
    keys = SQLiteKeyStore(str(db))
    key = keys.create("acme").secret
    native = AsyncMemory(url, embedder="hashing", background=False)
    app = create_app(native, keys, limits=Limits(rate=0), on_close=native.aclose)
    auth = {"Authorization": f"Bearer {key}"}
    with TestClient(app) as client:
        r = client.post("/v1/users/alice/sessions/s1/messages", headers=auth, json=SAID)
        assert r.status_code in (200, 201), r.text
        yield client, auth, url


def test_http_says_a_restart_is_needed_not_a_retry(tmp_path: Path) -> None:
    with served(tmp_path) as (client, auth, url):
        _reembed(url)
        for path, body in (
            ("/v1/users/alice/search", {"query": "heron"}),  # the search's model check
            ("/v1/users/alice/sessions/s1/messages", SAID),  # the store's trigger
        ):
            r = client.post(path, headers=auth, json=body)
            assert r.status_code == 500, r.text
            assert "retry-after" not in r.headers
            error = r.json()["error"]
            assert error["code"] == "embedding_mismatch", error
            message = error["message"]
            assert "'hashing-64'" in message and "will not help" in message, message
            assert "memstrata serve --embedder" in message, message


def test_mcp_says_a_restart_is_needed_not_a_retry(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    memory = Memory(url, embedder="hashing", background=False)
    server = build_mcp_server(ThreadedBackend(memory), Identity("acme", "alice", "s1"))

    def text(result: Any) -> str:
        return "".join(getattr(c, "text", "") for c in result.content)

    async def main() -> None:
        async with Client(server) as client:
            r = await client.call_tool("memory_add", {"content": "the heron by the lake"})
            assert not r.is_error, text(r)
            _reembed(url)
            for tool, args in (
                ("memory_search", {"query": "heron"}),
                ("memory_add", {"content": "an egret on the shore"}),
            ):
                r = await client.call_tool(tool, args)
                assert r.is_error, text(r)
                said = text(r)
                assert "'hashing-64'" in said and "will not help" in said, said
                assert "memstrata mcp --embedder" in said, said

    try:
        asyncio.run(main())
    finally:
        memory.close()
