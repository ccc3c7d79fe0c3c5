"""The server's rate limits on its event loop: a request spends a token its process holds
without a worker thread, and only a refill (a tenth of the burst) goes to the store."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from fastapi.testclient import TestClient

from memstrata import AsyncMemory
from memstrata.ratelimit import SharedRateLimiter
from memstrata.server import create_app
from memstrata.server.app import Limits
from memstrata.server.keys import SQLiteKeyStore
from memstrata.server.limits import MemoryCounters, admit
from memstrata.server.state import state_of

TINY = 1e-6  # requests/s: no window ends during a test


def _native(db: Path) -> AsyncMemory:
    return AsyncMemory(f"sqlite:///{db}", embedder="hashing", background=False)


def test_requests_with_held_tokens_need_no_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "h.db"
    mem = _native(db)
    keys = SQLiteKeyStore(str(db))
    secret = keys.create("acme").secret
    app = create_app(mem, keys, limits=Limits(rate=TINY, burst=100), mcp=False, on_close=mem.aclose)
    limiter = state_of(app).limiter
    assert isinstance(limiter, SharedRateLimiter)
    hops: list[Callable[..., Any]] = []
    takes: list[int] = []
    real_hop = anyio.to_thread.run_sync
    real_take = MemoryCounters.atake_counters

    async def hop(fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        hops.append(fn)
        return await real_hop(fn, *args, **kw)

    async def take(self: MemoryCounters, t: Any) -> Any:
        takes.append(t[0].amount)
        return await real_take(self, t)

    monkeypatch.setattr(anyio.to_thread, "run_sync", hop)
    monkeypatch.setattr(MemoryCounters, "atake_counters", take)
    h = {"Authorization": f"Bearer {secret}"}
    with TestClient(app) as client:
        codes = [client.get("/v1/whoami", headers=h).status_code for _ in range(30)]
    assert codes == [200] * 30
    assert takes == [10, 10, 10]  # a tenth of the burst per store write, on the loop
    assert hops == []  # before: one worker thread per request
    keys.close()


def test_two_processes_concurrent_coroutines_get_exactly_the_burst(tmp_path: Path) -> None:
    """Two AsyncMemory on one SQLite file stand in for two server processes; 80 concurrent
    requests of one key and tenant through :func:`admit`: the key's burst of 23 and no more,
    wherever the tokens were held (the tenant's 30 is not reached)."""
    db = tmp_path / "c.db"
    mems = [_native(db), _native(db)]

    async def main() -> list[bool]:
        for m in mems:
            await m.open()
        try:
            pairs = [
                (
                    SharedRateLimiter(TINY, 23, fallback=MemoryCounters(m), batch=5),
                    SharedRateLimiter(TINY, 30, fallback=MemoryCounters(m), batch=5),
                )
                for m in mems
            ]

            async def request(i: int) -> bool:
                key, tenant = pairs[i % 2]
                return await admit(key, tenant, "k1", "acme") is None

            return list(await asyncio.gather(*(request(i) for i in range(80))))
        finally:
            for m in mems:
                await m.aclose()

    admitted = asyncio.run(main())
    # a process is refused only once the store is spent and it holds nothing itself; the
    # other then spends what it holds on its own waiting requests: exactly the burst
    assert admitted.count(True) == 23


def test_with_redis_the_app_asks_it_on_the_loop(
    tmp_path: Path, redis_buffer_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``memstrata serve --redis``: the app opens a redis.asyncio client at startup and the
    limits ask Redis through it, with no worker thread; it is closed when the app stops."""
    from memstrata._async.store.redis_hot import open_redis as open_async_redis
    from memstrata.store.redis_hot import buffer_prefix, open_redis

    db = tmp_path / "r.db"
    mem = _native(db)
    keys = SQLiteKeyStore(str(db))
    secret = keys.create("acme").secret
    sync = open_redis(redis_buffer_url)
    app = create_app(
        mem,
        keys,
        limits=Limits(rate=TINY, burst=5),
        mcp=False,
        on_close=mem.aclose,
        redis=sync,
        redis_prefix=buffer_prefix(redis_buffer_url),
        async_redis=lambda: open_async_redis(redis_buffer_url),
    )
    limiter = state_of(app).limiter
    assert isinstance(limiter, SharedRateLimiter)
    hops: list[Callable[..., Any]] = []
    real_hop = anyio.to_thread.run_sync

    async def hop(fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        hops.append(fn)
        return await real_hop(fn, *args, **kw)

    monkeypatch.setattr(anyio.to_thread, "run_sync", hop)
    h = {"Authorization": f"Bearer {secret}"}
    with TestClient(app) as client:
        codes = [client.get("/v1/whoami", headers=h).status_code for _ in range(7)]
        assert limiter._async_script is not None
    assert codes == [200] * 5 + [429] * 2
    assert hops == []  # before: one worker thread per request
    assert limiter._async_script is None  # closed with the app
    assert sync.keys(f"{buffer_prefix(redis_buffer_url)}:rate:*")  # the bucket is in Redis
    sync.close()
    keys.close()
