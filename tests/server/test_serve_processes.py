"""`memstrata serve --workers 2` as a real subprocess on PostgreSQL: both processes answer,
the data and the keys are the same in both, and /mcp is served with the same keys."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memstrata.server.keys import open_key_store
from serving import serve


@dataclass
class Running:
    url: str
    db: str
    admin: str
    member: str
    bob: str  # acme, bound to user bob
    other: str  # globex


@pytest.fixture
def running(pg_url: str, tmp_path: Any) -> Iterator[Running]:
    keys = open_key_store(pg_url)
    admin = keys.create("acme", role="admin").secret
    member = keys.create("acme").secret
    bob = keys.create("acme", user="bob").secret
    other = keys.create("globex").secret
    keys.close()
    with serve(pg_url, tmp_path, "--rate-limit", "0", workers=2) as s:
        yield Running(s.url, pg_url, admin, member, bob, other)


def _each_connection(
    r: Running, method: str, path: str, key: str, n: int, **kw: Any
) -> list[httpx2.Response]:
    """``n`` requests, each on a new connection, so the kernel spreads them over processes."""
    out = []
    for _ in range(n):
        with httpx2.Client(base_url=r.url, timeout=60) as c:
            out.append(c.request(method, path, headers={"Authorization": f"Bearer {key}"}, **kw))
    return out


def test_two_processes_serve_the_same_data_and_keys(running: Running) -> None:
    r = running
    added = _each_connection(
        r,
        "POST",
        "/v1/users/alice/memories",
        r.member,
        12,
        json={"content": "Alice grows tomatoes", "dedup": False},
    )
    assert all(a.status_code == 201 for a in added), [a.text for a in added]
    ids = {a.json()["id"] for a in added}
    writers = {a.headers["x-memstrata-process"] for a in added}
    reads = _each_connection(
        r, "GET", "/v1/users/alice/memories", r.member, 30, params={"limit": 100}
    )
    readers = {x.headers["x-memstrata-process"] for x in reads}
    assert len(writers | readers) == 2, "both server processes should have answered"
    for x in reads:  # every process sees every write
        assert x.status_code == 200 and {m["id"] for m in x.json()["items"]} == ids
    # another tenant's key sees none of it, in any process
    for x in _each_connection(r, "GET", "/v1/users/alice/memories", r.other, 10):
        assert x.json()["total"] == 0
    # a revocation reaches every process: the one that revoked it at once, the others once
    # their memory of the key (ServeConfig.key_cache_seconds, 1 s) has lapsed
    member_id = r.member.split("_")[1]
    revoked = _each_connection(r, "DELETE", f"/v1/keys/{member_id}", r.admin, 1)[0]
    assert revoked.status_code == 200, revoked.text
    time.sleep(1.1)
    after = _each_connection(r, "GET", "/v1/whoami", r.member, 16)
    assert {x.status_code for x in after} == {401}
    assert len({x.headers["x-memstrata-process"] for x in after}) == 2


def test_mcp_is_served_at_slash_mcp_with_the_same_keys(running: Running) -> None:
    r = running
    url = f"{r.url}/mcp"

    async def call(key: str, tool: str, args: dict[str, Any], user: str | None = "alice") -> Any:
        headers = {"Authorization": f"Bearer {key}"}
        if user:
            headers["X-Memstrata-User"] = user
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            return await client.call_tool(tool, args)

    res = anyio.run(call, r.member, "memory_add", {"content": "The launch is on June 3"})
    assert not res.is_error, res.content
    rid = res.structured_content["id"]
    found = anyio.run(call, r.member, "memory_search", {"query": "launch June"})
    assert [h["id"] for h in found.structured_content["hits"]] == [rid]
    # the same record over the REST API of the same server: one store, one tenant
    got = _each_connection(r, "GET", f"/v1/users/alice/memories/{rid}", r.member, 1)[0]
    assert got.status_code == 200 and got.json()["tenant"] == "acme"
    # the tenant comes from the key: globex sees nothing of acme's
    miss = anyio.run(call, r.other, "memory_get", {"id": rid})
    assert miss.is_error and "no record" in "".join(c.text for c in miss.content)
    # bob's key: his own memory without a header; alice's memory is read-only for him
    own = anyio.run(call, r.bob, "memory_add", {"content": "Bob likes chess"}, None)
    assert not own.is_error and own.structured_content["text"] == "Bob likes chess"
    refused = anyio.run(call, r.bob, "memory_add", {"content": "planted by bob"})
    assert refused.is_error and "may read" in "".join(c.text for c in refused.content)
    hidden = anyio.run(call, r.bob, "memory_search", {"query": "launch June"})
    assert hidden.structured_content["hits"] == []  # private to alice
    # no key, no MCP
    assert (
        httpx2.post(
            url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=30
        ).status_code
        == 401
    )
