"""MCP tools (mounted at /mcp by ``memstrata serve``) called with another user's or
tenant's ids, text no store can hold, and arguments of the wrong type: each is a tool error
that names the problem, with nothing written and nothing of the other user shown (the
SDK's client cannot send a lone surrogate: the library's tests cover those)."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memstrata import Filters, Scope
from server.conftest import Served


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def _call(url: str, key: str, user: str, tool: str, args: dict[str, Any]) -> Any:
    headers = {"Authorization": f"Bearer {key}", "X-Memstrata-User": user}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
    ):
        return await client.call_tool(tool, args)


def _state(s: Served) -> list[Any]:
    everything = Filters(include_deleted=True, include_superseded=True)
    return [
        [(r.id, r.version, r.status, r.content.raw) for r in s.memory.store.list(sc, everything)]
        for sc in (Scope("acme", "alice"), Scope("acme", "bob"), Scope("globex", "alice"))
    ]


def test_other_users_ids_and_unstorable_text_are_tool_errors(live_server: Served) -> None:
    s = live_server
    bob = s.memory.add(Scope("acme", "bob"), "bob's locker code is 4512")
    theirs = s.memory.add(Scope("globex", "alice"), "globex alice's salary")
    url, key = s.url, s.admin
    before = _state(s)
    for rid in (bob.id, theirs.id):
        for tool, args in (
            ("memory_get", {"id": rid}),
            ("memory_update", {"id": rid, "content": "overwritten"}),
            ("memory_update", {"id": rid, "content": "overwritten", "expected_version": 1}),
            ("memory_delete", {"id": rid}),
        ):
            r = anyio.run(_call, url, key, "alice", tool, args)
            assert r.is_error and "no record" in _text(r), (tool, _text(r))
            assert "locker" not in _text(r) and "salary" not in _text(r)
    for tool, args, says in (
        ("memory_add", {"content": "tagged", "tags": ["a\x00b"]}, "NUL"),
        ("memory_get", {"id": 5}, "id"),
        ("memory_update", {"id": bob.id}, "content"),
        ("key_memory_set", {"text": "pinned \x00"}, "NUL"),
    ):
        r = anyio.run(_call, url, key, "alice", tool, args)
        assert r.is_error and says in _text(r), (tool, _text(r))
    assert _state(s) == before


@pytest.mark.parametrize("user", ["carol", "bob"])
def test_the_user_header_names_exactly_one_user(live_server: Served, user: str) -> None:
    """The X-Memstrata-User header picks the user; what one user adds another never sees."""
    s = live_server
    added = anyio.run(_call, s.url, s.admin, user, "memory_add", {"content": f"{user} likes tea"})
    assert not added.is_error, _text(added)
    other = "alice" if user != "alice" else "bob"
    found = anyio.run(_call, s.url, s.admin, other, "memory_search", {"query": "likes tea"})
    assert not found.is_error and "likes tea" not in _text(found)
