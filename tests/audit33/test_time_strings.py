"""A time sent as a string of digits over HTTP and MCP, on PostgreSQL: the library refuses
``observed_at="2024"`` and reads ``"20240101"`` as 1 January 2024; the server's models (the
HTTP API's and the MCP tools') read both as Unix times (1970-01-01T00:33:44 and 1970-08-23)
and stored them so, 201, without a word — a number in a string dodged session 24's rule
that a time is never a number (session 33's audit)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp import Client

from memstrata import AsyncMemory, Filters, Memory, Scope
from memstrata.mcp_server.identity import Identity
from memstrata.mcp_server.server import build_mcp_server
from memstrata.server import create_app
from memstrata.server.app import Limits
from memstrata.server.backend import ThreadedBackend
from memstrata.server.keys import SQLiteKeyStore

ME = Scope("acme", "alice", session="s1")
DIGITS = ["1", "2024", "1700000000", "1700000000000", "1.5", " 42 "]


@pytest.fixture
def http(pg_url: str, tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, str]]]:
    keys = SQLiteKeyStore(str(tmp_path / "keys.db"))
    native = AsyncMemory(pg_url, embedder="hashing", background=False)
    app = create_app(native, keys, limits=Limits(rate=0), on_close=native.aclose)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, {"Authorization": f"Bearer {keys.create('acme').secret}"}
    keys.close()


@pytest.mark.parametrize("value", DIGITS)
def test_digits_as_a_time_over_http_are_refused(
    http: tuple[TestClient, dict[str, str]], pg_url: str, value: str
) -> None:
    client, auth = http
    for path, body in (
        ("/v1/users/alice/memories", {"content": "a note"}),
        ("/v1/users/alice/sessions/s1/messages", {"role": "user", "content": "a turn"}),
    ):
        r = client.post(path, headers=auth, json={**body, "observed_at": value})
        assert r.status_code == 422, (path, r.text)
        assert "ISO 8601" in r.json()["error"]["message"]
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        assert mem.store.count(ME, Filters(include_deleted=True)) == 0


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        ("20240101", datetime(2024, 1, 1, tzinfo=UTC)),  # ISO 8601's basic form: the library's
        ("2024-01-01T10:00:00.000+0000", datetime(2024, 1, 1, 10, tzinfo=UTC)),
        ("2024-05-08T13:00:00+14:00", datetime(2024, 5, 7, 23, tzinfo=UTC)),
        ("0001-01-01T00:00:00Z", datetime(1, 1, 1, tzinfo=UTC)),
    ],
)
def test_iso_times_over_http_are_read_as_the_library_reads_them(
    http: tuple[TestClient, dict[str, str]], value: str, stored: datetime
) -> None:
    client, auth = http
    r = client.post(
        "/v1/users/alice/memories", headers=auth, json={"content": "a note", "observed_at": value}
    )
    assert r.status_code == 201, r.text
    assert datetime.fromisoformat(r.json()["observed_at"]) == stored


def test_digits_as_a_time_over_mcp_are_refused(pg_url: str) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as memory:
        server = build_mcp_server(ThreadedBackend(memory), Identity("acme", "alice", "s1"))
        results: list[Any] = []

        async def main() -> None:
            async with Client(server) as client:
                for value in DIGITS:
                    args = {"content": f"planted {value}", "observed_at": value}
                    results.append(await client.call_tool("memory_add", args))

        anyio.run(main)
        assert all(r.is_error for r in results), [r.content for r in results]
        assert memory.store.count(ME, Filters(include_deleted=True)) == 0
