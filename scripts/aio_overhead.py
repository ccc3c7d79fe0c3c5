"""What the thread hop costs: median latency of ``Memory`` vs ``AsyncMemory`` calls.

    python scripts/aio_overhead.py [DIR]   # two SQLite files in DIR (default: a temp dir)

Same store kind, same data (200 messages, hashing embedder), one call at a time.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memstrata import AsyncMemory, Memory, Scope

CALLS = 2000
ALICE = Scope("acme", "alice", session="s1")


def _median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def _timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def sync_run(url: str) -> tuple[list[float], list[float]]:
    mem = Memory(url, embedder="hashing", background=False)
    try:
        rec = mem.add(ALICE, "Alice lives in Lisbon")
        for i in range(200):
            mem.add_message(ALICE, "user", f"message {i} about topic {i % 7}")
        gets = _timed(lambda: mem.get(ALICE, rec.id), CALLS)
        searches = _timed(lambda: mem.search(ALICE, "topic 3", 5), CALLS // 10)
        return gets, searches
    finally:
        mem.close()


async def async_run(url: str) -> tuple[list[float], list[float]]:
    async with AsyncMemory(url, embedder="hashing", background=False) as mem:
        rec = await mem.add(ALICE, "Alice lives in Lisbon")
        for i in range(200):
            await mem.add_message(ALICE, "user", f"message {i} about topic {i % 7}")
        gets, searches = [], []
        for _ in range(CALLS):
            start = time.perf_counter()
            await mem.get(ALICE, rec.id)
            gets.append(time.perf_counter() - start)
        for _ in range(CALLS // 10):
            start = time.perf_counter()
            await mem.search(ALICE, "topic 3", 5)
            searches.append(time.perf_counter() - start)
        return gets, searches


def main(argv: list[str]) -> None:
    folder = Path(argv[0]) if argv else Path(tempfile.mkdtemp())
    s_get, s_search = sync_run(f"sqlite:///{folder / 'sync.db'}")
    a_get, a_search = asyncio.run(async_run(f"sqlite:///{folder / 'async.db'}"))
    print(
        f"get    median: Memory {_median_us(s_get):.0f} us, AsyncMemory {_median_us(a_get):.0f} us"
    )
    print(
        f"search median: Memory {_median_us(s_search):.0f} us, "
        f"AsyncMemory {_median_us(a_search):.0f} us"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
