"""CPU cost of the shared rate limiter's durable fallback, as the server drives it.

Prints CPU nanoseconds per call (the lowest of 7 repeats; process time, so that other
processes on the machine move it less than wall time), for:

- ``held``: :meth:`SharedRateLimiter.acquire_held` spending a token the process holds;
- ``admit``: what ``server.limits.admit`` does per request (``acquire_held``, else
  ``await acquire_async``) with batches of 10, so one refill in ten requests is awaited from
  ``memory://``'s counters;
- ``sync``: :meth:`SharedRateLimiter.acquire` with batches of 10.

Compare two trees by running it alternately with each on ``PYTHONPATH``:

    PYTHONPATH=src python scripts/ratelimit_overhead.py
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence

from memstrata.ratelimit import SharedRateLimiter
from memstrata.store import open_store
from memstrata.store.quota_counters import QuotaCounters, Refusal, Take

TINY = 1e-6  # requests/s: no window ends during a run


class Counters:
    """A store's counters, sync and as coroutines (what MemoryCounters gives the server)."""

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


async def _no_thread(fn: Callable[[], float]) -> float:
    raise AssertionError("no worker thread should be needed")


def _lowest(run: Callable[[int], float], n: int, repeats: int = 7) -> int:
    return round(min(run(n) for _ in range(repeats)) / n * 1e9)


def main() -> None:
    store = open_store("memory://")
    if not isinstance(store, QuotaCounters):
        raise SystemExit("memory:// keeps no counters")
    counters = Counters(store)
    holding = SharedRateLimiter(TINY, 10**9, fallback=counters, batch=10**8)
    asyncio.run(holding.acquire_async("k", _no_thread))  # one refill: then tokens held
    batched = SharedRateLimiter(TINY, 10**9, fallback=counters, batch=10)

    def held(n: int) -> float:
        spend = holding.acquire_held
        start = time.process_time()
        for _ in range(n):
            spend("k")
        return time.process_time() - start

    def admit(n: int) -> float:
        async def run() -> float:
            spend, refill = batched.acquire_held, batched.acquire_async
            start = time.process_time()
            for _ in range(n):
                if spend("a") is None:
                    await refill("a", _no_thread)
            return time.process_time() - start

        return asyncio.run(run())

    def sync(n: int) -> float:
        acquire = batched.acquire
        start = time.process_time()
        for _ in range(n):
            acquire("s")
        return time.process_time() - start

    figures = {"held": _lowest(held, 100_000), "admit": _lowest(admit, 50_000)}
    figures["sync"] = _lowest(sync, 50_000)
    print(json.dumps(figures))
    store.close()


if __name__ == "__main__":
    main()
