"""The MCP server through the SDK's own client: in-process, over stdio and over HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from memstrata import AsyncMemory, Filters, Memory, Scope
from memstrata.mcp_server.identity import Identity
from memstrata.mcp_server.server import build_mcp_server, http_app
from memstrata.server.backend import Backend, MemoryBackend, ThreadedBackend
from memstrata.server.keys import SQLiteKeyStore
from serving import free_port, mcp_http

TOOLS = {
    "memory_add",
    "memory_search",
    "memory_context",
    "memory_get",
    "memory_update",
    "memory_delete",
    "memory_list",
    "key_memory_set",
    "key_memory_list",
}
READ_ONLY = {"memory_search", "memory_context", "memory_get", "memory_list", "key_memory_list"}
DESTRUCTIVE = {"memory_update", "memory_delete"}
FACTS = [
    "I am allergic to peanuts",
    "My daughter Lena plays the cello",
    "I work night shifts as a nurse at the Porto hospital",
]


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    mem = Memory(f"sqlite:///{tmp_path / 'mcp.db'}", embedder="hashing", background=False)
    yield mem
    mem.close()


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def test_tools_declare_annotations_and_output_schemas(memory: Memory) -> None:
    server = build_mcp_server(ThreadedBackend(memory), Identity("acme", "alice", "s1"))

    async def main() -> None:
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == TOOLS
            for name, tool in tools.items():
                ann = tool.annotations
                assert ann is not None and ann.read_only_hint == (name in READ_ONLY), name
                assert ann.destructive_hint == (name in DESTRUCTIVE), name
                assert tool.output_schema and tool.output_schema["type"] == "object", name
                assert tool.input_schema.get("additionalProperties") is False, name
                props = set(tool.input_schema.get("properties", {}))
                assert not props & {"tenant", "user", "scope"}, name
            assert "observed_at" in tools["memory_add"].input_schema["properties"]

    anyio.run(main)


def test_arguments_the_schema_forbids_are_refused_and_nothing_is_written(memory: Memory) -> None:
    server = build_mcp_server(ThreadedBackend(memory), Identity("acme", "alice", "s1"))

    async def main() -> None:
        async with Client(server) as client:
            for args in (
                {"content": "planted", "tenant": "globex"},
                {"content": "planted", "user": "bob"},
                {"content": 42},
                {"content": ""},
                {},
                {"content": "planted", "observed_at": "yesterday-ish"},
                {"content": "planted", "importance": 3},
            ):
                r = await client.call_tool("memory_add", args)
                assert r.is_error, args
                assert "invalid arguments for memory_add" in _text(r), args
            r = await client.call_tool("memory_context", {"token_budget": 10**9})
            assert r.is_error and "token_budget" in _text(r)
            r = await client.call_tool("memory_get", {"id": "0" * 32})
            assert r.is_error and "no record" in _text(r)

    anyio.run(main)
    for tenant, user in (("acme", "alice"), ("globex", "alice"), ("acme", "bob")):
        assert memory.store.count(Scope(tenant, user), Filters(include_deleted=True)) == 0


@pytest.mark.parametrize("native", [False, True], ids=["sync-memory", "async-memory"])
def test_every_tool_in_process(memory: Memory, native: bool, tmp_path: Path) -> None:
    """The tools over a sync Memory (each call on a thread) and over an AsyncMemory
    (awaited on the server's loop, as ``memstrata mcp`` serves them), same store."""
    amem = AsyncMemory(f"sqlite:///{tmp_path / 'mcp.db'}", embedder="hashing", background=False)
    backend: MemoryBackend = Backend(amem) if native else ThreadedBackend(memory)
    server = build_mcp_server(backend, Identity("acme", "alice", "s1"))

    async def main() -> None:
        async with amem, Client(server) as client:
            added = (
                await client.call_tool(
                    "memory_add",
                    {"content": "Prefers tea over coffee", "observed_at": "2024-05-08T09:00:00Z"},
                )
            ).structured_content
            assert added is not None and added["observed_at"].startswith("2024-05-08T09:00")
            rid = added["id"]
            hits = (await client.call_tool("memory_search", {"query": "tea"})).structured_content
            assert hits is not None and hits["hits"][0]["id"] == rid
            got = (await client.call_tool("memory_get", {"id": rid})).structured_content
            assert got is not None and got["version"] == 1
            upd = (
                await client.call_tool(
                    "memory_update",
                    {"id": rid, "content": "Prefers green tea", "expected_version": 1},
                )
            ).structured_content
            assert upd is not None and upd["version"] == 2
            stale = await client.call_tool(
                "memory_update", {"id": rid, "content": "x", "expected_version": 1}
            )
            assert stale.is_error
            listed = (await client.call_tool("memory_list", {})).structured_content
            assert listed is not None and [m["id"] for m in listed["memories"]] == [rid]
            await client.call_tool("key_memory_set", {"text": "Answer in Portuguese"})
            keys = (await client.call_tool("key_memory_list", {})).structured_content
            assert keys is not None and keys["memories"][0]["text"] == "Answer in Portuguese"
            ctx = (
                await client.call_tool("memory_context", {"query": "what to drink?"})
            ).structured_content
            assert ctx is not None and "Answer in Portuguese" in ctx["text"]
            assert "Prefers green tea" in ctx["text"]
            gone = (await client.call_tool("memory_delete", {"id": rid})).structured_content
            assert gone == {"id": rid, "status": "deleted"}

    anyio.run(main)
    notes = memory.list(
        Scope("acme", "alice"), filters={"types": ["note"], "include_deleted": True}
    )
    assert [(n.text, n.status.value, n.version) for n in notes] == [
        ("Prefers green tea", "deleted", 3)
    ]


def _stdio(db: Path, key: str, session_env: dict[str, str] | None = None) -> StdioServerParameters:
    env = {**os.environ, "MEMSTRATA_API_KEY": key, **(session_env or {})}
    return StdioServerParameters(
        command=sys.executable,
        args=[
            "-c",
            "from memstrata.cli.app import main; main()",
            "--db",
            f"sqlite:///{db}",
            "--user",
            "alice",
            "--embedder",
            "hashing",
            "mcp",
        ],
        env=env,
    )


def test_stdio_three_facts_in_one_session_are_in_a_new_sessions_context(tmp_path: Path) -> None:
    db = tmp_path / "stdio.db"
    keys = SQLiteKeyStore(str(db))
    key = keys.create("acme").secret
    keys.close()

    async def first_session() -> None:
        async with Client(_stdio(db, key)) as client:
            for fact in FACTS:
                r = await client.call_tool("memory_add", {"content": fact})
                assert not r.is_error, _text(r)

    async def second_session() -> str:
        async with Client(_stdio(db, key)) as client:
            r = await client.call_tool(
                "memory_context", {"query": "What should I know about the user?"}
            )
            assert not r.is_error, _text(r)
            assert r.structured_content is not None
            return str(r.structured_content["text"])

    anyio.run(first_session)
    context = anyio.run(second_session)
    for fact in FACTS:
        assert fact in context
    mem = Memory(f"sqlite:///{db}", embedder="hashing", background=False)
    try:
        notes = mem.list(Scope("acme", "alice"), filters={"types": ["note"]})
        assert sorted(n.text for n in notes) == sorted(FACTS)
    finally:
        mem.close()


def test_stdio_refuses_a_revoked_key(tmp_path: Path) -> None:
    db = tmp_path / "revoked.db"
    keys = SQLiteKeyStore(str(db))
    new = keys.create("acme")
    keys.revoke(new.key.id)
    keys.close()
    params = _stdio(db, new.secret)
    proc = subprocess.run(
        [params.command, *params.args],
        env=params.env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2 and "unknown or revoked" in proc.stderr


def test_streamable_http_needs_a_key_and_takes_the_tenant_from_it(tmp_path: Path) -> None:
    db = tmp_path / "http.db"
    memory = Memory(f"sqlite:///{db}", embedder="hashing", background=False)
    keys = SQLiteKeyStore(str(db))
    acme, globex = keys.create("acme").secret, keys.create("globex").secret
    server = build_mcp_server(ThreadedBackend(memory), Identity(None, "alice", keys=keys))
    port = free_port()
    uv = uvicorn.Server(
        uvicorn.Config(http_app(server, keys), host="127.0.0.1", port=port, log_config=None)
    )
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    while not uv.started:
        time.sleep(0.05)
    url = f"http://127.0.0.1:{port}/mcp"

    async def call(key: str | None, tool: str, args: dict[str, Any], user: str = "alice") -> Any:
        headers = {"X-Memstrata-User": user}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            return await client.call_tool(tool, args)

    try:
        r = anyio.run(call, acme, "memory_add", {"content": "acme: launch is on June 3"})
        assert not r.is_error, _text(r)
        rid = r.structured_content["id"]
        r = anyio.run(call, acme, "memory_search", {"query": "launch June"})
        assert [h["id"] for h in r.structured_content["hits"]] == [rid]
        # the same id and query under another tenant's key: nothing
        r = anyio.run(call, globex, "memory_get", {"id": rid})
        assert r.is_error and "no record" in _text(r)
        r = anyio.run(call, globex, "memory_search", {"query": "launch June"})
        assert r.structured_content["hits"] == []
        with httpx2.Client() as plain:
            resp = plain.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert resp.status_code == 401
            resp = plain.post(url, json={}, headers={"Authorization": "Bearer ms_bad"})
            assert resp.status_code == 401
        assert memory.store.count(Scope("globex", "alice"), Filters()) == 0
        assert memory.get(Scope("acme", "alice"), rid).tenant == "acme"
    finally:
        uv.should_exit = True
        thread.join(timeout=10)
        keys.close()
        memory.close()


def test_mcp_http_command_serves_an_async_memory(tmp_path: Path) -> None:
    """``memstrata mcp --transport http``: the AsyncMemory is opened in the app's lifespan
    (uvicorn's loop), serves the tools, and is closed when the process stops."""
    db = tmp_path / "mcp-http.db"
    keys = SQLiteKeyStore(str(db))
    key = keys.create("acme").secret
    keys.close()

    async def call(url: str, tool: str, args: dict[str, Any]) -> Any:
        headers = {"X-Memstrata-User": "alice", "Authorization": f"Bearer {key}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            return await client.call_tool(tool, args)

    with mcp_http(f"sqlite:///{db}", tmp_path) as m:
        r = anyio.run(call, m.url, "memory_add", {"content": "The launch is on June 3"})
        assert not r.is_error, _text(r)
        rid = r.structured_content["id"]
        r = anyio.run(call, m.url, "memory_search", {"query": "launch June"})
        assert [h["id"] for h in r.structured_content["hits"]] == [rid]
    mem = Memory(f"sqlite:///{db}", embedder="hashing", background=False)
    try:
        [note] = mem.list(Scope("acme", "alice"), filters={"types": ["note"]})
        assert note.text == "The launch is on June 3"
    finally:
        mem.close()
