"""Bad input at the MCP endpoint that ``memstrata serve`` mounts at /mcp, and the rest of the
HTTP bad-input list: each refused with a message saying what to fix, nothing written."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memstrata import Filters, Scope

from .conftest import Served

U = "/v1/users/alice"


def _count(s: Served, tenant: str = "acme", user: str = "alice") -> int:
    return s.memory.store.count(Scope(tenant, user), Filters(include_deleted=True))


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def _call(url: str, key: str, tool: str, args: dict[str, Any]) -> Any:
    headers = {"Authorization": f"Bearer {key}", "X-Memstrata-User": "alice"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
    ):
        return await client.call_tool(tool, args)


@pytest.mark.parametrize(
    ("tool", "args", "says"),
    [
        ("memory_add", {"content": "planted", "tenant": "globex"}, "tenant"),
        ("memory_add", {"content": "planted", "user": "bob"}, "user"),
        ("memory_add", {"content": ["not", "text"]}, "content"),
        ("memory_add", {"content": "planted", "importance": 2}, "importance"),
        ("memory_add", {"content": "planted", "observed_at": "last tuesday"}, "observed_at"),
        ("memory_context", {"token_budget": 0}, "token_budget"),
        ("memory_context", {"token_budget": 10**9}, "token_budget"),
        ("memory_search", {"query": "x", "top_k": 0}, "top_k"),
        ("memory_list", {"limit": "all"}, "limit"),
        ("memory_delete", {}, "id"),
    ],
)
def test_mounted_mcp_refuses_arguments_its_schema_forbids(
    live_server: Served, tool: str, args: dict[str, Any], says: str
) -> None:
    r = anyio.run(_call, live_server.url, live_server.member, tool, args)
    assert r.is_error and says in _text(r), _text(r)
    for tenant, user in (("acme", "alice"), ("globex", "alice"), ("acme", "bob")):
        assert _count(live_server, tenant, user) == 0


def test_mounted_mcp_needs_a_live_key(live_server: Served) -> None:
    url = f"{live_server.url}/mcp"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer nonsense"}, {"X-API-Key": "ms_x"}):
        r = httpx2.post(url, json=body, headers=headers, timeout=30)
        assert r.status_code == 401 and "API key" in r.json()["error"]["message"]
    ok = anyio.run(_call, live_server.url, live_server.member, "memory_add", {"content": "one"})
    assert not ok.is_error
    live_server.keys.revoke(live_server.member.split("_")[1])
    with pytest.raises(Exception):  # noqa: B017 - the SDK raises its own HTTP error type
        anyio.run(_call, live_server.url, live_server.member, "memory_add", {"content": "two"})
    assert _count(live_server) == 1


@pytest.mark.parametrize(
    "path",
    [f"{U}/sessions/s1/messages", f"{U}/sessions/s1/messages/batch", f"{U}/search",
     f"{U}/context", f"{U}/key-memory", f"{U}/memories"],
)  # fmt: skip
def test_malformed_json_anywhere_is_400_naming_the_fix(served: Served, path: str) -> None:
    r = served.client.post(
        path,
        content=b'{"role": "user", "content": "x"',
        headers={**served.h(served.member), "content-type": "application/json"},
    )
    assert r.status_code == 400, r.text
    assert "not valid JSON" in r.json()["error"]["message"]
    assert _count(served) == 0


@pytest.mark.parametrize(
    ("query", "field"),
    [({"limit": "all"}, "limit"), ({"limit": 0}, "limit"), ({"offset": -1}, "offset"),
     ({"type": "gossip"}, "type"), ({"include_deleted": "maybe"}, "include_deleted")],
)  # fmt: skip
def test_wrong_query_types_are_422_naming_the_parameter(
    served: Served, query: dict[str, Any], field: str
) -> None:
    r = served.client.get(f"{U}/memories", params=query, headers=served.h(served.member))
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert any(f.startswith(f"query.{field}") for f in err["fields"]), err
    assert f"query.{field}" in err["message"]


@pytest.mark.parametrize("budget", [0, 10**9])
def test_budget_0_and_a_billion_say_the_allowed_range(served: Served, budget: int) -> None:
    r = served.client.post(
        f"{U}/context", json={"query": "hi", "token_budget": budget},
        headers=served.h(served.member),
    )  # fmt: skip
    assert r.status_code == 422
    message = r.json()["error"]["message"]
    assert "body.token_budget" in message and ("greater" in message or "less" in message)


def test_a_revoked_key_writes_nothing_anywhere(served: Served) -> None:
    h = served.h(served.member)
    served.keys.revoke(served.member.split("_")[1])
    for method, path, body in [
        ("POST", f"{U}/memories", {"content": "x"}),
        ("POST", f"{U}/sessions/s1/messages", {"role": "user", "content": "x"}),
        ("POST", f"{U}/key-memory", {"text": "x"}),
        ("POST", f"{U}/sessions/s1/task", {"goal": "x", "steps": ["a"]}),
    ]:
        r = served.client.request(method, path, json=body, headers=h)
        assert r.status_code == 401 and "memstrata keys create" in r.json()["error"]["message"]
    assert _count(served) == 0
