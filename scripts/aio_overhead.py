"""``Memory`` vs ``AsyncMemory``: one call at a time, and many calls at once.

    python scripts/aio_overhead.py [DIR]                       # SQLite files in DIR
    python scripts/aio_overhead.py postgresql://user@host/db   # two fresh schemas there

Same store kind, same data (200 messages, hashing embedder). Prints the median latency of
``get`` and ``search`` called one at a time, then the wall time of 200 searches issued by
8 concurrent callers: threads sharing one ``Memory``, coroutines sharing one ``AsyncMemory``.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from memstrata import AsyncMemory, Memory, Scope

CALLS = 2000
CONCURRENT = 8
BURST = 200
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


def sync_run(url: str) -> tuple[list[float], list[float], float]:
    mem = Memory(url, embedder="hashing", background=False)
    try:
        rec = mem.add(ALICE, "Alice lives in Lisbon")
        for i in range(200):
            mem.add_message(ALICE, "user", f"message {i} about topic {i % 7}")
        gets = _timed(lambda: mem.get(ALICE, rec.id), CALLS)
        searches = _timed(lambda: mem.search(ALICE, "topic 3", 5), CALLS // 10)
        start = time.perf_counter()
        with ThreadPoolExecutor(CONCURRENT) as pool:
            list(pool.map(lambda i: mem.search(ALICE, f"topic {i % 7}", 5), range(BURST)))
        return gets, searches, time.perf_counter() - start
    finally:
        mem.close()


async def async_run(url: str) -> tuple[list[float], list[float], float]:
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
        queue = list(range(BURST))

        async def caller() -> None:
            while queue:
                i = queue.pop()
                await mem.search(ALICE, f"topic {i % 7}", 5)

        start = time.perf_counter()
        await asyncio.gather(*(caller() for _ in range(CONCURRENT)))
        return gets, searches, time.perf_counter() - start


def _urls(argv: list[str]) -> tuple[str, str]:
    if argv and argv[0].startswith(("postgresql://", "postgres://")):
        base = argv[0] + ("&" if "?" in argv[0] else "?") + "schema="
        return base + "s_" + uuid.uuid4().hex[:12], base + "a_" + uuid.uuid4().hex[:12]
    folder = Path(argv[0]) if argv else Path(tempfile.mkdtemp())
    return f"sqlite:///{folder / 'sync.db'}", f"sqlite:///{folder / 'async.db'}"


def main(argv: list[str]) -> None:
    sync_url, async_url = _urls(argv)
    s_get, s_search, s_burst = sync_run(sync_url)
    a_get, a_search, a_burst = asyncio.run(async_run(async_url))
    print(
        f"get    median: Memory {_median_us(s_get):.0f} us, AsyncMemory {_median_us(a_get):.0f} us"
    )
    print(
        f"search median: Memory {_median_us(s_search):.0f} us, "
        f"AsyncMemory {_median_us(a_search):.0f} us"
    )
    print(
        f"{BURST} searches, {CONCURRENT} concurrent callers: Memory + threads {s_burst:.2f} s, "
        f"AsyncMemory + coroutines {a_burst:.2f} s"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
