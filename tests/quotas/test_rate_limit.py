"""SharedRateLimiter in one process: the Redis bucket, and the fallbacks when Redis dies
(one warning, the durable store's windows, Redis used again when it is back)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

import servers
from memstrata.errors import ValidationError
from memstrata.ratelimit import SharedRateLimiter
from memstrata.store import open_store
from memstrata.store.quota_counters import QuotaCounters
from memstrata.store.redis_hot import open_redis

LOGGER = "memstrata.ratelimit"


@pytest.fixture
def own() -> Iterator[servers.RedisServer]:
    try:
        server = servers.redis_server_process()
    except RuntimeError as exc:
        servers.unavailable("redis-server", str(exc))
        raise
    yield server
    server.kill()


def _burst(limiter: SharedRateLimiter, key: str, n: int) -> int:
    return sum(limiter.acquire(key) == 0.0 for _ in range(n))


def test_a_burst_then_a_wait_per_key(own: servers.RedisServer) -> None:
    client, other = open_redis(own.url), open_redis(own.url)
    a = SharedRateLimiter(0.5, 3, client=client, prefix="t1")
    b = SharedRateLimiter(0.5, 3, client=other, prefix="t1")  # as if in another process
    assert _burst(a, "k", 2) + _burst(b, "k", 5) == 3  # one bucket between them
    wait = b.acquire("k")
    assert 0 < wait <= 2.0 and b.retry_after(wait) in ("1", "2")
    assert _burst(a, "other", 3) == 3  # keys have buckets of their own
    assert client.keys("t1:rate:*") and not client.keys("*k*")  # keys are hashed
    client.close()
    other.close()


def test_redis_dying_moves_the_limit_to_the_store_with_one_warning(
    own: servers.RedisServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'r.db'}")
    assert isinstance(store, QuotaCounters)
    now = [1000.0]
    client = open_redis(own.url)
    limiter = SharedRateLimiter(
        1, 4, client=client, fallback=store, cooldown=0.0, clock=lambda: now[0]
    )
    assert _burst(limiter, "k", 2) == 2
    own.kill()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert _burst(limiter, "k", 10) == 4  # a fresh window of `burst` on the store
        now[0] += 4.0  # the next window (burst / rate = 4 s)
        assert _burst(limiter, "k", 10) == 4
    warnings = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "durable store" in warnings[0].getMessage()
    with sqlite3.connect(tmp_path / "r.db") as conn:  # the passed window was forgotten
        assert conn.execute("SELECT count(*) FROM meta WHERE key LIKE 'rate:%'").fetchone() == (1,)
    own.start()  # back: Redis is used again (its bucket was lost with the process)
    assert _burst(limiter, "k", 10) == 4
    client.close()
    store.close()


def test_without_redis_or_store_each_process_limits_alone() -> None:
    limiter = SharedRateLimiter(1, 2)
    assert _burst(limiter, "k", 5) == 2
    assert not SharedRateLimiter(0, 1).enabled
    assert SharedRateLimiter(0, 1).acquire("k") == 0.0
    for bad in (
        lambda: SharedRateLimiter(-1, 2),
        lambda: SharedRateLimiter(1, 0),
        lambda: SharedRateLimiter(float("nan"), 2),
        lambda: SharedRateLimiter(1, 2.5),
    ):  # type: ignore[arg-type]
        with pytest.raises(ValidationError):
            bad()


def test_two_limiters_on_one_redis_from_concurrent_coroutines(own: servers.RedisServer) -> None:
    """The server's event-loop path (acquire_held, else acquire_async with a worker thread
    for Redis): 40 concurrent requests over two processes' limiters get exactly the burst."""
    import anyio.to_thread

    clients = [open_redis(own.url), open_redis(own.url)]
    limiters = [SharedRateLimiter(1e-6, 7, client=c, prefix="t3") for c in clients]
    assert limiters[0].acquire_held("k") is None  # Redis is the only one that knows

    async def request(i: int) -> float:
        return await limiters[i % 2].acquire_async("k", anyio.to_thread.run_sync)

    async def main() -> list[float]:
        return list(await asyncio.gather(*(request(i) for i in range(40))))

    waits = asyncio.run(main())
    assert waits.count(0.0) == 7 and all(w > 0 for w in waits if w)
    for c in clients:
        c.close()
