"""SharedRateLimiter in one process: the Redis bucket, and the fallbacks when Redis dies
(one warning, the durable store's windows, Redis used again when it is back)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

import servers
from memstrata.errors import ValidationError
from memstrata.ratelimit import SharedRateLimiter
from memstrata.store import open_store
from memstrata.store.counter_types import rate_period
from memstrata.store.quota_counters import QuotaCounters, Refusal, Take
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
        now[0] += 4.0  # and the one after
        assert _burst(limiter, "k", 10) == 4
    warnings = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "durable store" in warnings[0].getMessage()
    with sqlite3.connect(tmp_path / "r.db") as conn:  # the window two back was forgotten
        rows = conn.execute("SELECT key FROM meta WHERE key LIKE 'rate:%' ORDER BY key")
        # a window's counter is named by when it stops counting (session 30)
        assert [key.rsplit(":", 1)[1] for (key,) in rows] == [
            rate_period(w, 4.0) for w in (251, 252)
        ]
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


@pytest.mark.parametrize("client", ["async", "thread"])
def test_two_limiters_on_one_redis_from_concurrent_coroutines(
    own: servers.RedisServer, client: str
) -> None:
    """The server's event-loop path: Redis asked through a redis.asyncio client with no
    worker thread (or, without one, through the sync client on a thread): 40 concurrent
    requests over two processes' limiters get exactly the burst."""
    import anyio.to_thread

    from memstrata._async.store.redis_hot import open_redis as open_async_redis

    clients = [open_redis(own.url), open_redis(own.url)]
    limiters = [SharedRateLimiter(1e-6, 7, client=c, prefix=f"t3{client}") for c in clients]
    assert limiters[0].acquire_held("k") is None  # Redis is the only one that knows
    hops: list[int] = []

    async def run_sync(fn: Callable[[], float]) -> float:
        hops.append(1)
        return await anyio.to_thread.run_sync(fn)

    async def main() -> list[float]:
        native = [await open_async_redis(own.url) for _ in limiters] if client == "async" else []
        for limiter, c in zip(limiters, native, strict=False):
            limiter.use_async_redis(c)
        try:
            waits = await asyncio.gather(
                *(limiters[i % 2].acquire_async("k", run_sync) for i in range(40))
            )
        finally:
            for limiter, c in zip(limiters, native, strict=False):
                limiter.use_async_redis(None)
                await c.aclose()
        return list(waits)

    waits = asyncio.run(main())
    assert waits.count(0.0) == 7 and all(w > 0 for w in waits if w)
    assert len(hops) == (0 if client == "async" else 40)
    for c in clients:
        c.close()


class _AsyncStoreCounters:
    """A sync store's counters, also as coroutines (what MemoryCounters gives the server)."""

    def __init__(self, store: QuotaCounters) -> None:
        self.store = store

    def take_counters(self, takes: Sequence[Take]) -> Refusal | None:
        return self.store.take_counters(takes)

    def forget_counters(self, keys: Sequence[str]) -> None:
        self.store.forget_counters(keys)

    async def atake_counters(self, takes: Sequence[Take]) -> Refusal | None:
        return self.store.take_counters(takes)

    async def aforget_counters(self, keys: Sequence[str]) -> None:
        self.store.forget_counters(keys)


def test_redis_dying_under_the_async_client_moves_the_limit_to_the_store(
    own: servers.RedisServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from memstrata._async.store.redis_hot import open_redis as open_async_redis

    store = open_store(f"sqlite:///{tmp_path / 'a.db'}")
    assert isinstance(store, QuotaCounters)
    client = open_redis(own.url)
    limiter = SharedRateLimiter(
        1e-6, 4, client=client, fallback=_AsyncStoreCounters(store), cooldown=60.0, batch=2
    )

    async def no_thread(fn: Callable[[], float]) -> float:
        raise AssertionError("no worker thread should be needed")

    async def main() -> list[float]:
        native = await open_async_redis(own.url)
        limiter.use_async_redis(native)
        try:
            waits = [await limiter.acquire_async("k", no_thread) for _ in range(2)]
            own.kill()
            with caplog.at_level(logging.WARNING, logger=LOGGER):
                waits += [await limiter.acquire_async("k", no_thread) for _ in range(6)]
        finally:
            limiter.use_async_redis(None)
            await native.aclose()
        return waits

    waits = asyncio.run(main())
    # 2 from Redis, then a fresh window of 4 on the store, refused after
    assert waits[:6] == [0.0] * 6 and waits[6] > 0 and waits[7] > 0
    warnings = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "durable store" in warnings[0].getMessage()
    assert limiter.acquire_held("k") is not None  # Redis is down: the process answers
    client.close()
    store.close()
