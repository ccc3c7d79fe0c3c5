"""Params a method's model refuses get a line saying which parameter was wrong and what to
send, with the request's id, the same over stdio and over HTTP (``/mcp``).

Before: the SDK answered each with -32602 "Invalid request parameters" and ``data: ""``
(stdio and HTTP), and over HTTP params that were no object with "Validation error: " and
pydantic's dump, id null; a request sent before ``initialize`` over stdio got the same
bare "Invalid request parameters"; a tool that does not exist, "Unknown tool: NAME" alone."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from serving import Running, mcp_http
from stdio_mcp import key_for, stdio_answers


def _call(rid: int, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


# message, the parameter the answer names, what it says to send
CASES: list[tuple[dict[str, Any], str, str]] = [
    (_call(1, {"name": "memory_add", "arguments": "x"}), "arguments:", "JSON object"),
    (_call(2, {"name": 5, "arguments": {}}), "name:", "send a string"),
    (_call(3, {"arguments": {"content": "a"}}), "name:", "add this parameter"),
    (_call(4, {"name": "memory_add", "arguments": [1, 2]}), "arguments:", "JSON object"),
    ({"jsonrpc": "2.0", "id": 5, "method": "tools/call"}, "params:", "add this parameter"),
    (_call(6, [1]), "params:", "JSON object"),
    (_call(7, "x"), "params:", "JSON object"),
    (
        {"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {"cursor": 5}},
        "cursor:",
        "send a string",
    ),  # fmt: skip
    (
        {"jsonrpc": "2.0", "id": 9, "method": "resources/read", "params": {"uri": 5}},
        "uri:",
        "send a string",
    ),  # fmt: skip
    (
        {"jsonrpc": "2.0", "id": 10, "method": "logging/setLevel", "params": {"level": "loud"}},
        "level:",
        "allowed values",
    ),  # fmt: skip
    (
        _call(11, {"name": "memory_add", "arguments": {"content": "a"}, "_meta": "x"}),
        "_meta:",
        "JSON object",
    ),  # fmt: skip
]


def _clear(answer: dict[str, Any], rid: int, name: str, fix: str) -> str:
    assert answer["id"] == rid, answer
    error = answer["error"]
    message = str(error["message"])
    assert error["code"] == -32602, answer
    assert message != "Invalid request parameters", answer  # the SDK's bare answer
    assert name in message and fix in message, answer
    assert "validation error" not in message.lower() and "pydantic" not in message, answer
    assert "input_value" not in message and len(message) < 400, answer
    return message


UNKNOWN = _call(50, {"name": "memory_forget_all", "arguments": {}})


def _names_the_tools(answer: dict[str, Any]) -> None:
    """A tool that does not exist: a tool error naming the tools there are (before: the
    SDK's "Unknown tool: memory_forget_all" alone)."""
    result = answer["result"]
    text = result["content"][0]["text"]
    assert result["isError"] is True and "memory_forget_all" in text, answer
    assert "memory_add" in text and "key_memory_list" in text, answer


def test_stdio_names_the_parameter(tmp_path: Path) -> None:
    answers, _ = stdio_answers(tmp_path / "m.db", [*(c[0] for c in CASES), UNKNOWN])
    by_id = {a["id"]: a for a in answers}
    for message, name, fix in CASES:
        _clear(by_id[message["id"]], message["id"], name, fix)
    _names_the_tools(by_id[50])


def test_stdio_before_initialize_says_so(tmp_path: Path) -> None:
    early = [{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
             _call(2, {"name": "memory_add", "arguments": {"content": "too early"}})]  # fmt: skip
    answers, _ = stdio_answers(tmp_path / "m.db", early, initialize=False)
    assert len(answers) == 2, answers
    for answer in answers:
        assert answer["error"]["code"] == -32602, answer
        assert '"initialize" first' in answer["error"]["message"], answer


@pytest.fixture(scope="module")
def mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Running, str]]:
    tmp = tmp_path_factory.mktemp("audit32-mcp")
    db = tmp / "m.db"
    key = key_for(db)
    with mcp_http(f"sqlite:///{db}", tmp, "--rate-limit", "0") as m:
        yield m, key
    assert "Traceback" not in m.log_text(), m.log_text()[-3000:]


def test_http_says_what_stdio_says(mcp: tuple[Running, str], tmp_path: Path) -> None:
    m, key = mcp
    headers = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json", "MCP-Protocol-Version": "2025-06-18",
               "Authorization": f"Bearer {key}", "X-Memstrata-User": "alice"}  # fmt: skip
    over_stdio, _ = stdio_answers(tmp_path / "s.db", [c[0] for c in CASES])
    stdio_by_id = {a["id"]: a["error"]["message"] for a in over_stdio if "error" in a}
    for message, name, fix in CASES:
        r = httpx2.post(m.url, content=json.dumps(message).encode(), headers=headers, timeout=60)
        assert r.status_code == 400, r.text
        said = _clear(r.json(), message["id"], name, fix)
        assert said == stdio_by_id[message["id"]]
    r = httpx2.post(m.url, content=json.dumps(UNKNOWN).encode(), headers=headers, timeout=60)
    assert r.status_code == 200, r.text
    _names_the_tools(r.json())
    good = _call(99, {"name": "memory_add", "arguments": {"content": "kept"}})
    r = httpx2.post(m.url, content=json.dumps(good).encode(), headers=headers, timeout=60)
    assert r.status_code == 200 and r.json()["result"]["isError"] is False, r.text
