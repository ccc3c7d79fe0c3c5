"""A tool call whose arguments the schema refuses gets a short answer: which argument,
what was wrong with it, what to send instead — over the real transports (``memstrata mcp
--transport http``, and stdio).

Before session 24 the answer was pydantic's own text: "Error executing tool memory_add: 1
validation error for memory_addArguments / importance / Input should be a valid number
[type=float_type, input_value='AAAA…', input_type=str] / For further information visit
https://errors.pydantic.dev/2.12/v/float_type" — a URL, the model's own input echoed back,
and the internal model's name. And ``observed_at: 12`` was taken as a Unix time (1970-01-01
00:00:12; pydantic guesses seconds or milliseconds by the number's size): now refused, as
the HTTP API refuses it, with the fix."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from memstrata import Memory, Scope
from memstrata.server.keys import SQLiteKeyStore
from serving import Running, mcp_http

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
           "MCP-Protocol-Version": "2025-06-18"}  # fmt: skip
HUGE = "A" * 50_000
ISO = "ISO 8601"


@pytest.fixture(scope="module")
def mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Running, str, Path]]:
    tmp = tmp_path_factory.mktemp("mcp-errors")
    db = tmp / "m.db"
    keys = SQLiteKeyStore(str(db))
    key = keys.create("acme").secret
    keys.close()
    with mcp_http(f"sqlite:///{db}", tmp, "--rate-limit", "0") as m:
        yield m, key, db
    assert "Traceback" not in m.log_text(), m.log_text()[-3000:]


def _call(m: Running, key: str, tool: str, args: Any) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}  # fmt: skip
    r = httpx2.post(m.url, content=json.dumps(body).encode(), timeout=60,
                    headers={**HEADERS, "Authorization": f"Bearer {key}",
                             "X-Memstrata-User": "alice"})  # fmt: skip
    assert r.status_code == 200, r.text
    return dict(r.json()["result"])


def _short_and_clear(text: str, argument: str, fix: str) -> None:
    assert argument in text and fix in text, text
    for noise in ("pydantic", "http", "For further information", "input_value",
                  "Arguments", "validation error for", "AAAAAAAAAA"):  # fmt: skip
        assert noise not in text, text
    assert len(text) < 300, text


@pytest.mark.parametrize(
    ("tool", "args", "argument", "fix"),
    [("memory_search", {"query": "x", "top_k": 1e999}, "top_k", "send a finite number"),
     ("memory_search", {"query": "x", "top_k": 0}, "top_k", "send a larger value"),
     ("memory_add", {"content": "x", "importance": HUGE}, "importance", "send a number"),
     ("memory_add", {"content": "x", "importance": 2}, "importance", "send a smaller value"),
     ("memory_add", {"content": ["a"]}, "content", "send a string"),
     ("memory_add", {"content": HUGE * 3}, "content", "send a shorter string"),
     ("memory_add", {"content": "x", "tags": "one"}, "tags", "send a JSON array"),
     ("memory_add", {"content": "x", "tags": [1, HUGE]}, "tags.0", "send a string"),
     ("memory_add", {"content": "x", "tenant": "globex"}, "tenant", "remove this argument"),
     ("memory_add", {}, "content", "add this argument"),
     ("memory_add", {"content": "x", "observed_at": "yesterday"}, "observed_at", ISO),
     ("memory_add", {"content": "x", "observed_at": 12}, "observed_at", ISO),
     ("memory_add", {"content": "x", "observed_at": 1_700_000_000_000}, "observed_at", ISO),
     ("memory_list", {"types": "note"}, "types", "send a JSON array"),
     ("memory_update", {"id": "x", "content": "y", "expected_version": "abc"},
      "expected_version", "send an integer")],
)  # fmt: skip
def test_a_refused_argument_is_named_with_its_fix_and_nothing_else(
    mcp: tuple[Running, str, Path], tool: str, args: dict[str, Any], argument: str, fix: str
) -> None:
    m, key, _ = mcp
    result = _call(m, key, tool, args)
    assert result["isError"] is True, result
    _short_and_clear(result["content"][0]["text"], argument, fix)


def test_a_number_for_observed_at_stores_nothing(mcp: tuple[Running, str, Path]) -> None:
    m, key, db = mcp
    for when in (0, 12, 1_700_000_000, 1_700_000_000_000, 1.5, True):
        result = _call(m, key, "memory_add", {"content": f"said at {when!r}", "observed_at": when})
        assert result["isError"] is True, (when, result)
    ok = _call(
        m, key, "memory_add", {"content": "said at noon", "observed_at": "2024-05-08T12:00Z"}
    )
    assert ok["isError"] is False and ok["structuredContent"]["observed_at"].startswith(
        "2024-05-08"
    )
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        said = [r.text for r in mem.list(Scope("acme", "alice"))]
    assert not [t for t in said if t.startswith("said at") and t != "said at noon"], said


def test_over_stdio_too(tmp_path: Path) -> None:
    db = tmp_path / "stdio.db"
    keys = SQLiteKeyStore(str(db))
    key = keys.create("acme").secret
    keys.close()
    params = StdioServerParameters(
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
        ],  # fmt: skip
        env={**os.environ, "MEMSTRATA_API_KEY": key},
    )

    async def main() -> list[str]:
        async with Client(params) as client:
            out = []
            for args in ({"content": "x", "importance": HUGE}, {"content": "x", "observed_at": 12}):
                r = await client.call_tool("memory_add", args)
                assert r.is_error
                out.append("".join(getattr(c, "text", "") for c in r.content))
            return out

    importance, observed = anyio.run(main)
    _short_and_clear(importance, "importance", "send a number")
    _short_and_clear(observed, "observed_at", ISO)
