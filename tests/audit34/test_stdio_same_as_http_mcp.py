"""MCP over stdio (``memstrata mcp``, a real process) answers each hostile call as ``/mcp``
of ``memstrata serve`` does: the same tool error (or the same acceptance), word for word.
Before session 34 both took ``"importance": true`` / ``"0.5"``, ``"top_k": "3"`` and
``"priority": 2.0`` (the SDK's lax models); the HTTP API refuses them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stdio_mcp import stdio_answers

from .surfaces import USERS, Surfaces

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("memory_add", {"content": "a\u0000b"}),
    ("memory_add", {"content": " "}),
    ("memory_add", {"content": "one", "importance": True}),
    ("memory_add", {"content": "two", "importance": "0.5"}),
    ("memory_search", {"query": "x", "top_k": "3"}),
    ("memory_add", {"content": "three", "observed_at": "2024"}),
    ("memory_add", {"content": "four", "observed_at": "0001-01-01T00:00:00+01:00"}),
    ("memory_add", {"content": "five", "tags": ["a\u0000"]}),
    ("memory_context", {"token_budget": float("inf")}),
    ("key_memory_set", {"text": "pinned", "priority": 2.0}),
    ("memory_add", {"content": "\u202esix\u200b"}),
]
REFUSED_BEFORE = {2, 3, 4, 9}  # the calls the lax models took


def _gist(answer: dict[str, Any]) -> tuple[str, str]:
    if "error" in answer:
        return "rpc error", str(answer["error"]["code"])
    result = answer["result"]
    text = result["content"][0]["text"]
    if result.get("isError"):
        return "tool error", text
    return "ok", json.loads(text)["text"]


def test_stdio_answers_as_http_mcp_does(tmp_path: Path) -> None:
    lines = [
        {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": n, "arguments": a}}
        for i, (n, a) in enumerate(CALLS, start=1)
    ]
    answers, log = stdio_answers(tmp_path / "stdio.db", [json.dumps(x) for x in lines])
    by_id = {a["id"]: a for a in answers}
    (tmp_path / "http").mkdir()
    s = Surfaces(f"sqlite:///{tmp_path / 'http' / 'm.db'}", tmp_path / "http")
    try:
        for i, (tool, args) in enumerate(CALLS, start=1):
            stdio = _gist(by_id[i])
            http = _gist(s.mcp(tool, args, user=USERS["mcp"]))
            assert stdio == http, (tool, args, stdio, http)
            if i - 1 in REFUSED_BEFORE:
                assert stdio[0] == "tool error" and "invalid arguments" in stdio[1], stdio
    finally:
        s.close()
