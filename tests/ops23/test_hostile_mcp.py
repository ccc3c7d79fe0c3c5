"""Hostile requests against a real ``memstrata mcp --transport http``: each gets a clear
error (HTTP 4xx with a JSON body, a JSON-RPC error, or a tool result with ``isError``), the
server goes on serving a second client, and its log holds no traceback.

Before session 23 a request whose id MCP does not allow (``1.5``, ``1e999``, ``null``,
``[1]``) was taken for a notification: 202 and no body, the client waited for an answer
that never came; every other probe here held, and is tested so that it keeps holding.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from memstrata.server.keys import SQLiteKeyStore
from serving import Running, mcp_http

from .hostile import exchange, request

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
           "MCP-Protocol-Version": "2025-06-18"}  # fmt: skip


@pytest.fixture(scope="module")
def mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Running, str, str]]:
    tmp = tmp_path_factory.mktemp("hostile-mcp")
    db = tmp / "m.db"
    keys = SQLiteKeyStore(str(db))
    acme, other = keys.create("acme").secret, keys.create("globex").secret
    keys.close()
    with mcp_http(f"sqlite:///{db}", tmp, "--rate-limit", "0") as m:
        yield m, acme, other
    assert "Traceback" not in m.log_text(), m.log_text()[-3000:]


def _post(m: Running, key: str, body: Any, **headers: str) -> httpx2.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx2.post(m.url, content=content, timeout=60,
                       headers={**HEADERS, "Authorization": f"Bearer {key}",
                                "X-Memstrata-User": "alice", **headers})  # fmt: skip


def _call(m: Running, key: str, tool: str, args: Any, **headers: str) -> dict[str, Any]:
    r = _post(m, key, {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": {"name": tool, "arguments": args}}, **headers)  # fmt: skip
    assert r.status_code == 200, r.text
    return dict(r.json())


def _second_client_served(m: Running, key: str) -> None:
    result = _call(m, key, "memory_add", {"content": "a client beside the probe"})["result"]
    assert result["isError"] is False, result


@pytest.mark.parametrize(
    "body",
    [b"[" * 100_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
     b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_add",'
     b'"arguments":{"content":"x","tags":' + b"[" * 5000 + b"]" * 5000 + b"}}}",
     b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"tools/list"}'],
    ids=["100k [", "50k {", "nested arguments", "5000-digit id"],
)  # fmt: skip
def test_unparseable_bodies_are_a_json_rpc_parse_error(
    mcp: tuple[Running, str, str], body: bytes
) -> None:
    m, key, _ = mcp
    r = _post(m, key, body)
    assert r.status_code == 400 and r.json()["error"]["code"] == -32700, r.text
    _second_client_served(m, key)


@pytest.mark.parametrize("rid", [b"1.5", b"1e999", b"-1e999", b"null", b"[1]", b'{"a":1}',
                                 b"true"])  # fmt: skip
def test_a_request_id_mcp_does_not_allow_is_refused(
    mcp: tuple[Running, str, str], rid: bytes
) -> None:
    """Before: 202 and no body (taken for a notification)."""
    m, key, _ = mcp
    r = _post(m, key, b'{"jsonrpc":"2.0","id":%s,"method":"tools/list"}' % rid)
    assert r.status_code == 400, (r.status_code, r.text)
    error = r.json()["error"]
    assert error["code"] == -32600 and "not a string or an integer" in error["message"]
    _second_client_served(m, key)


def test_ids_mcp_allows_are_answered(mcp: tuple[Running, str, str]) -> None:
    m, key, _ = mcp
    for rid in (0, -0, 2**62, "x", ""):
        r = _post(m, key, {"jsonrpc": "2.0", "id": rid, "method": "tools/list"})
        assert r.status_code == 200 and r.json()["id"] == rid, r.text
    notification = _post(m, key, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert notification.status_code == 202


def test_a_batch_is_refused_whatever_its_size(mcp: tuple[Running, str, str]) -> None:
    m, key, _ = mcp
    call = {"jsonrpc": "2.0", "method": "tools/call",
            "params": {"name": "memory_search", "arguments": {"query": "x"}}}  # fmt: skip
    small = _post(m, key, [{**call, "id": i} for i in range(2000)])  # under 1 MiB
    assert small.status_code == 400 and small.json()["error"]["code"] == -32600  # mcp31
    big = _post(m, key, [{**call, "id": i} for i in range(10_000)])  # over --max-body
    assert big.status_code == 413 and big.json()["error"]["code"] == "too_large"
    _second_client_served(m, key)


@pytest.mark.parametrize(
    ("tool", "args"),
    [("memory_search", {"query": "x", "top_k": 1e999}),
     ("memory_search", {"query": "x", "top_k": 2**4000}),
     ("memory_search", {"query": "x", "top_k": -0}),
     ("memory_add", {"content": "x", "importance": 1e999}),
     ("memory_list", {"offset": 2**4000}),
     ("memory_context", {"token_budget": 2**4000}),
     ("memory_add", {"content": 123}),
     ("memory_add", {"content": ["a"]}),
     ("memory_add", {"content": "x", "tags": "one"}),
     ("memory_add", {"content": "x", "tags": [1, 2]}),
     ("memory_add", {"content": "x", "observed_at": "yesterday"}),
     ("memory_search", {"query": {"a": 1}}),
     ("memory_list", {"types": "note"}),
     ("memory_get", {"id": None}),
     ("memory_update", {"id": "x", "content": "y", "expected_version": "abc"}),
     ("memory_add", {}),
     ("memory_add", {"content": "x", "tenant": "globex"}),
     ("no_such_tool", {})],
)  # fmt: skip
def test_arguments_of_the_wrong_type_are_a_tool_error(
    mcp: tuple[Running, str, str], tool: str, args: dict[str, Any]
) -> None:
    m, key, _ = mcp
    result = _call(m, key, tool, args)["result"]
    assert result["isError"] is True, result
    assert result["content"][0]["text"], result
    _second_client_served(m, key)


def test_arguments_that_are_not_an_object_are_a_json_rpc_error(
    mcp: tuple[Running, str, str],
) -> None:
    m, key, _ = mcp
    for params in ({"name": "memory_add", "arguments": "x"}, [1]):
        r = _post(m, key, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
        assert r.status_code in (200, 400) and r.json()["error"]["code"] == -32602, r.text
    _second_client_served(m, key)


def test_another_session_or_tenant_gets_nothing_of_the_caller(
    mcp: tuple[Running, str, str],
) -> None:
    """The stateless endpoint keeps no sessions: an ``Mcp-Session-Id`` of anyone is
    ignored and the key alone decides the tenant."""
    m, key, other = mcp
    _call(m, key, "memory_add", {"content": "acme's secret plan"})
    foreign = _call(m, other, "memory_list", {}, **{"Mcp-Session-Id": "f" * 32})
    assert "secret plan" not in json.dumps(foreign)
    assert foreign["result"]["structuredContent"]["total"] == 0
    mine = _call(m, key, "memory_list", {}, **{"Mcp-Session-Id": "0" * 32})
    assert "secret plan" in json.dumps(mine)


def test_head_and_framing_probes_are_refused_as_json(mcp: tuple[Running, str, str]) -> None:
    m, key, _ = mcp
    path = b"/mcp"
    probes = {
        "431": request(
            "POST", path, key, b"{}", extra=b"X-Memstrata-User: " + b"a" * 70_000 + b"\r\n"
        ),  # fmt: skip
        "414": request("POST", path + b"?" + b"a" * 40_000, key, b"{}"),
        "400": request("POST", path, key, b"{}", extra=b"Content-Length: 9\r\n"),
    }
    for status, data in probes.items():
        answer = exchange(m.address, data)
        assert answer.status == status and answer.error_code(), answer.raw[:300]
        _second_client_served(m, key)
