"""`memstrata mcp` enforces quotas (both transports), rate limits and a body cap (HTTP), as
`serve` does."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from memstrata import Memory, Scope
from memstrata.server.keys import SQLiteKeyStore
from serving import CLI, mcp_http


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def test_stdio_refuses_a_write_over_the_user_quota_and_writes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "quota.db"
    keys = SQLiteKeyStore(str(db))
    key = keys.create("acme").secret
    keys.close()
    args = [*CLI[1:], "--db", f"sqlite:///{db}", "--user", "alice", "--embedder", "hashing",
            "mcp", "--user-quota", "records=3"]  # fmt: skip
    params = StdioServerParameters(
        command=CLI[0], args=args, env={**os.environ, "MEMSTRATA_API_KEY": key}
    )

    async def add_until_refused() -> tuple[int, str]:
        async with Client(params) as client:
            for i in range(10):
                r = await client.call_tool("memory_add", {"content": f"Note {i}: buy stamps"})
                if r.is_error:
                    return i, _text(r)
        return 10, ""

    added, error = anyio.run(add_until_refused)
    assert 0 < added < 10, "the quota of 3 records was never enforced"
    assert "quota" in error and "3" in error, error
    mem = Memory(f"sqlite:///{db}", embedder="hashing", background=False)
    try:
        notes = mem.list(Scope("acme", "alice"), filters={"types": ["note"]})
        assert sorted(n.text for n in notes) == [f"Note {i}: buy stamps" for i in range(added)]
        assert len(mem.list(Scope("acme", "alice"))) <= 3
    finally:
        mem.close()


def test_a_bad_quota_stops_the_command_before_it_serves(tmp_path: Path) -> None:
    cmd = [*CLI, "--db", f"sqlite:///{tmp_path / 'bad.db'}", "--embedder", "hashing", "mcp",
           "--user-quota", "records=lots"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "records" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def _statuses(url: str, keys: list[str]) -> list[httpx2.Response]:
    with httpx2.Client(timeout=30) as http:
        return [
            http.post(
                url,
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={
                    "Authorization": f"Bearer {k}",
                    "Accept": "application/json, text/event-stream",
                },
            )
            for k in keys
        ]


def test_http_transport_rate_limits_each_key(tmp_path: Path) -> None:
    db = tmp_path / "rate.db"
    keys = SQLiteKeyStore(str(db))
    first, second = keys.create("acme").secret, keys.create("globex").secret
    keys.close()
    with mcp_http(f"sqlite:///{db}", tmp_path, "--rate-limit", "0.01", "--burst", "2") as m:
        replies = _statuses(m.url, [first, first, first, second])
    assert [r.status_code == 429 for r in replies] == [False, False, True, False]
    refused = replies[2]
    assert int(refused.headers["Retry-After"]) >= 1
    assert "rate limit" in refused.text and "this key" in refused.text


def test_http_transport_rate_limits_a_tenant_over_all_its_keys(tmp_path: Path) -> None:
    db = tmp_path / "tenant.db"
    keys = SQLiteKeyStore(str(db))
    one, two, other = (keys.create(t).secret for t in ("acme", "acme", "globex"))
    keys.close()
    options = ("--rate-limit", "0", "--tenant-rate-limit", "0.01", "--tenant-burst", "2")
    with mcp_http(f"sqlite:///{db}", tmp_path, *options) as m:
        replies = _statuses(m.url, [one, two, two, other])
    assert [r.status_code == 429 for r in replies] == [False, False, True, False]
    assert "tenant 'acme'" in replies[2].text


def test_http_transport_refuses_a_body_over_max_body(tmp_path: Path) -> None:
    """Before session 22 ``mcp --transport http`` had no ``--max-body``: a 2 MB ping was
    read and answered 200 (only a 20 MB one met a cap: the SDK's plain-text 413)."""
    db = tmp_path / "body.db"
    keys = SQLiteKeyStore(str(db))
    key = keys.create("acme").secret
    keys.close()
    headers = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"}
    big = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * 300_000}}
    with (
        mcp_http(f"sqlite:///{db}", tmp_path, "--max-body", "200000") as m,
        httpx2.Client(timeout=30) as http,
    ):
        refused = http.post(m.url, json=big, headers=headers)
        fine = http.post(m.url, json={"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers=headers)

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            yield b'{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"pad": "'
            for _ in range(30):
                yield b"y" * 10_000
            yield b'"}}'

        streamed = http.post(m.url, content=chunks(), headers=headers)
    assert refused.status_code == 413 and "larger than 200000 bytes" in refused.text
    assert streamed.status_code == 413
    assert fine.status_code == 200, fine.text


def test_http_transport_logs_json_lines(tmp_path: Path) -> None:
    """As `serve` logs. Before session 22 the standalone endpoint configured no logging: at
    the default level it logged nothing (a stalled client's 408 was invisible)."""
    db = tmp_path / "log.db"
    with mcp_http(f"sqlite:///{db}", tmp_path, "--header-timeout", "1") as m:
        stalled = socket.create_connection(m.address)
        stalled.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\n")
        time.sleep(2.5)
        stalled.close()
    lines = [json.loads(x) for x in m.log_text().splitlines() if x.strip()]
    assert any("headers did not arrive within 1 s" in x["message"] for x in lines)
    assert all(x["level"] in ("debug", "info", "warning", "error") for x in lines)
