"""CPU cost of the shared rate limiter's durable fallback, as the server drives it.

Prints CPU nanoseconds per call (the lowest of 7 repeats; process time, so that other
processes on the machine move it less than wall time), for:

- ``held``: :meth:`SharedRateLimiter.acquire_held` spending a token the process holds;
- ``admit``: what ``server.limits.admit`` does per request (``acquire_held``, else
  ``await acquire_async``) with batches of 10, so one refill in ten requests is awaited from
  the counters of an ``AsyncMemory`` on ``memory://`` (the server's ``MemoryCounters``: the
  store's threads);
- ``sync``: :meth:`SharedRateLimiter.acquire` with batches of 10 (the counters called on
  the calling thread).

Compare two trees by running it alternately with each on ``PYTHONPATH``:

    PYTHONPATH=src python scripts/ratelimit_overhead.py
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Coroutine
from typing import Any

from memstrata.aio import AsyncMemory
from memstrata.ratelimit import SharedRateLimiter
from memstrata.server.limits import MemoryCounters

TINY = 1e-6  # requests/s: no window ends during a run
REPEATS = 7


async def _no_thread(fn: Callable[[], float]) -> float:
    raise AssertionError("no worker thread should be needed")


def _timed(n: int, call: Callable[[], object]) -> float:
    start = time.process_time()
    for _ in range(n):
        call()
    return time.process_time() - start


async def _timed_async(n: int, call: Callable[[], Coroutine[Any, Any, object]]) -> float:
    start = time.process_time()
    for _ in range(n):
        await call()
    return time.process_time() - start


def _per_call(seconds: list[float], n: int) -> int:
    return round(min(seconds) / n * 1e9)


async def main() -> None:
    memory = AsyncMemory("memory://", embedder="hashing", background=False)
    await memory.open()
    try:
        counters = MemoryCounters(memory)
        holding = SharedRateLimiter(TINY, 10**9, fallback=counters, batch=10**8)
        await holding.acquire_async("k", _no_thread)  # one refill: then tokens held
        batched = SharedRateLimiter(TINY, 10**9, fallback=counters, batch=10)

        async def admit() -> None:
            if batched.acquire_held("a") is None:
                await batched.acquire_async("a", _no_thread)

        n = 50_000
        held = [_timed(2 * n, lambda: holding.acquire_held("k")) for _ in range(REPEATS)]
        admitted = [await _timed_async(n, admit) for _ in range(REPEATS)]
        sync = [_timed(n, lambda: batched.acquire("s")) for _ in range(REPEATS)]
        figures = {"held": _per_call(held, 2 * n), "admit": _per_call(admitted, n)}
        figures["sync"] = _per_call(sync, n)
        print(json.dumps(figures))
    finally:
        await memory.aclose()


if __name__ == "__main__":
    asyncio.run(main())
