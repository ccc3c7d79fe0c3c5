"""The server's rate limits are global: every process on a store draws from one bucket.

Two apps on one SQLite file stand in for two processes in-process (each has its own
connections); then ``memstrata serve --workers 2`` runs for real on PostgreSQL, with the
store's counters and with Redis, and requests on fresh connections reach both processes.
The limits are tiny rates with a few requests of burst, so no refill or window boundary
can happen during a test: exactly ``burst`` requests pass between all processes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi.testclient import TestClient

from memstrata import Memory
from memstrata.ratelimit import SharedRateLimiter
from memstrata.server import create_app
from memstrata.server.app import Limits
from memstrata.server.keys import SQLiteKeyStore, open_key_store
from memstrata.server.limits import RateLimiter, shared_limiter
from serving import serve

TINY = 1e-6  # requests/s: a window of burst / TINY seconds, months long


def _codes(client: Any, key: str, n: int, path: str = "/v1/whoami") -> list[int]:
    return [
        client.get(path, headers={"Authorization": f"Bearer {key}"}).status_code for _ in range(n)
    ]


def test_two_apps_on_one_sqlite_file_share_the_key_and_tenant_limits(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    limits = Limits(rate=TINY, burst=4, tenant_rate=TINY, tenant_burst=6)
    apps = []
    for _ in range(2):  # two "processes": separate Memory, key store and connections
        mem = Memory(f"sqlite:///{db}", embedder="hashing", background=False)
        keys = SQLiteKeyStore(str(db))
        apps.append((mem, keys, TestClient(create_app(mem, keys, limits=limits, mcp=False))))
    a_key = apps[0][1].create("acme").secret
    b_key = apps[0][1].create("acme").secret
    c_key = apps[0][1].create("globex").secret
    one, two = apps[0][2], apps[1][2]
    # key a: 4 requests pass between both apps, alternating
    codes = [(_codes(one, a_key, 1) + _codes(two, a_key, 1)) for _ in range(5)]
    flat = [c for pair in codes for c in pair]
    assert flat.count(200) == 4 and flat[:4] == [200] * 4 and set(flat[4:]) == {429}
    # key b of the same tenant: its own 4, but the tenant has only 6 - 4 = 2 left
    assert _codes(two, b_key, 1) + _codes(one, b_key, 1) == [200, 200]
    refused = two.get("/v1/whoami", headers={"Authorization": f"Bearer {b_key}"})
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert "tenant 'acme'" in refused.json()["error"]["message"]
    assert _codes(one, b_key, 2) == [429, 429]
    # another tenant is untouched
    assert _codes(one, c_key, 2) + _codes(two, c_key, 2) == [200] * 4
    for mem, keys, client in apps:
        client.close()
        keys.close()
        mem.close()


def test_the_limiter_kind_follows_the_store(tmp_path: Path) -> None:
    mem = Memory(f"sqlite:///{tmp_path / 'k.db'}", embedder="hashing", background=False)
    try:
        assert isinstance(shared_limiter(5, 10, store=mem.store), SharedRateLimiter)
        assert isinstance(shared_limiter(0, 10, store=mem.store), RateLimiter)  # off
        assert isinstance(shared_limiter(5, 10), RateLimiter)  # nothing to share through
    finally:
        mem.close()


def test_batched_durable_windows_never_admit_more_than_the_burst(tmp_path: Path) -> None:
    """Two limiters taking 3 requests per store write: never more than the burst between
    them, and the spare ones are spent from memory (one store write per batch)."""
    mem = Memory(f"sqlite:///{tmp_path / 'b.db'}", embedder="hashing", background=False)
    other = Memory(f"sqlite:///{tmp_path / 'b.db'}", embedder="hashing", background=False)
    try:
        a = SharedRateLimiter(TINY, 10, fallback=mem.store, batch=3)  # type: ignore[arg-type]
        b = SharedRateLimiter(TINY, 10, fallback=other.store, batch=3)  # type: ignore[arg-type]
        admitted = sum(1 for i in range(40) if (a if i % 2 else b).acquire("k") == 0.0)
        assert admitted <= 10
        assert admitted >= 10 - 2 * 2  # at most batch - 1 unspent per process
        writes = []
        real = mem.store.take_counters  # type: ignore[attr-defined]

        def counting(takes: Any) -> Any:
            writes.append(takes)
            return real(takes)

        c = SharedRateLimiter(TINY, 9, fallback=mem.store, batch=3)  # type: ignore[arg-type]
        mem.store.take_counters = counting  # type: ignore[attr-defined]
        assert [c.acquire("fresh") for _ in range(9)] == [0.0] * 9
        assert len(writes) == 3 and c.acquire("fresh") > 0
    finally:
        mem.close()
        other.close()


# --- two real processes ------------------------------------------------------------------
def _fresh(url: str, key: str, n: int) -> list[httpx2.Response]:
    """``n`` requests each on a new connection, so the kernel spreads them over processes."""
    out = []
    for _ in range(n):
        with httpx2.Client(base_url=url, timeout=60) as c:
            out.append(c.get("/v1/whoami", headers={"Authorization": f"Bearer {key}"}))
    return out


@pytest.mark.parametrize("where", ["store", "redis"])
def test_two_server_processes_share_one_limit(
    where: str, pg_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    keys = open_key_store(pg_url)
    a_key = keys.create("acme").secret
    b_key = keys.create("acme").secret
    keys.close()
    extra = ["--rate-limit", str(TINY), "--burst", "5"]
    extra += ["--tenant-rate-limit", str(TINY), "--tenant-burst", "8"]
    if where == "redis":
        extra += ["--redis", request.getfixturevalue("redis_buffer_url")]
    with serve(pg_url, tmp_path, "--no-mcp", "--no-background", *extra, workers=2) as s:
        first = _fresh(s.url, a_key, 24)
        second = _fresh(s.url, b_key, 12)
    pids = {r.headers["x-memstrata-process"] for r in first + second}
    assert len(pids) == 2, "both processes should have answered"
    # per process the key would get 5 in each (up to 10); globally exactly 5
    assert [r.status_code for r in first].count(200) == 5
    assert [r.status_code for r in first][:5] == [200] * 5
    # the tenant's 8: key b gets the 3 left, wherever its requests land
    assert [r.status_code for r in second] == [200] * 3 + [429] * 9
    for r in (first + second)[-3:]:
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
        assert r.json()["error"]["code"] == "rate_limited"


def test_mcp_and_rest_draw_from_the_same_bucket(tmp_path: Path) -> None:
    db = tmp_path / "mcp.db"
    mem = Memory(f"sqlite:///{db}", embedder="hashing", background=False)
    keys = SQLiteKeyStore(str(db))
    key = keys.create("acme", user="alice").secret
    app = create_app(mem, keys, limits=Limits(rate=TINY, burst=2))
    h = {
        "Authorization": f"Bearer {key}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    try:
        # the MCP SDK's DNS-rebinding protection accepts 127.0.0.1 (the app's default host)
        with TestClient(app, base_url="http://127.0.0.1:8000") as client:
            assert client.get("/v1/whoami", headers=h).status_code == 200
            listed = client.post("/mcp", json=call, headers=h)
            assert listed.status_code == 200, listed.text
            assert "memory_search" in listed.text
            over = client.post("/mcp", json=call, headers=h)
            assert over.status_code == 429 and int(over.headers["retry-after"]) >= 1
            assert over.json()["error"]["code"] == "rate_limited"
            assert client.get("/v1/whoami", headers=h).status_code == 429
    finally:
        keys.close()
        mem.close()
