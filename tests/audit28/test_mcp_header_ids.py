"""The MCP endpoint's ``X-Memstrata-User`` / ``X-Memstrata-Session`` headers with a
non-ASCII id (session 28's audit).

Before: the server read header bytes as latin-1 (Starlette's decoding), so a client that
sent ``café`` in UTF-8 (httpx, every SDK) wrote into user ``cafÃ©``, a user the HTTP API
(``/v1/users/caf%C3%A9``) never shows; a header that was not UTF-8 at all was taken too.
Now the value is read as UTF-8, and bytes that are not UTF-8 are a tool error that writes
nothing."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memstrata import Filters, Scope
from server.conftest import Served


async def _call(url: str, headers: dict[str, bytes], tool: str, args: dict[str, Any]) -> Any:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
    ):
        return await client.call_tool(tool, args)


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def _users(s: Served) -> dict[str, list[str]]:
    everything = Filters(include_deleted=True)
    return {
        u: [r.content.raw for r in s.memory.store.list(Scope("acme", u), everything)]
        for u in ("café", "cafÃ©", "caf")
    }


def test_a_utf8_user_header_names_that_user(live_server: Served) -> None:
    s = live_server
    headers = {"Authorization": f"Bearer {s.admin}".encode(), "X-Memstrata-User": "café".encode()}
    headers["X-Memstrata-Session"] = "séance".encode()
    r = anyio.run(_call, s.url, headers, "memory_add", {"content": "I like oolong tea"})
    assert not r.is_error, _text(r)
    assert _users(s)["café"] == ["I like oolong tea"]
    assert _users(s)["cafÃ©"] == []
    got = s.client.get("/v1/users/caf%C3%A9/memories", headers=s.h(s.admin)).json()
    assert [i["content"]["raw"] for i in got["items"]] == ["I like oolong tea"]
    r = anyio.run(_call, s.url, headers, "memory_context", {"query": "tea"})
    assert not r.is_error and "oolong" in _text(r), _text(r)


def test_a_user_header_that_is_not_utf8_is_a_tool_error(live_server: Served) -> None:
    s = live_server
    headers = {"Authorization": f"Bearer {s.admin}".encode(), "X-Memstrata-User": b"caf\xe9"}
    r = anyio.run(_call, s.url, headers, "memory_add", {"content": "I like oolong tea"})
    assert r.is_error and "x-memstrata-user header is not UTF-8" in _text(r), _text(r)
    assert _users(s) == {"café": [], "cafÃ©": [], "caf": []}
