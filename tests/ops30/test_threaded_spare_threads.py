"""The threaded adapter's single threads (one per transaction or stream at a time) are
kept at most ``threads`` idle: a burst of 200 transactions at once made 200 threads, and
before session 30 every one of them stayed alive, idle, for the life of the store."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from memstrata.aio.stores import open_store
from memstrata.filters import Filters
from memstrata.scope import Scope
from store.conftest import Maker

SCOPE = Scope("t1", "u1")
BURST = 200
THREADS = 4  # the adapter's default: its pool's size and the spare single threads kept


@pytest.fixture(params=["sqlite", "memory"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'a.db'}" if request.param == "sqlite" else "memory://"


def _settled(bound: int, timeout: float = 20.0) -> int:
    """The live thread count once it is at most ``bound`` (or the timeout passed)."""
    deadline = time.monotonic() + timeout
    while threading.active_count() > bound and time.monotonic() < deadline:
        time.sleep(0.05)
    return threading.active_count()


def test_a_burst_of_transactions_leaves_at_most_the_bound_of_threads(url: str) -> None:
    maker = Maker()
    writes = [maker.write() for _ in range(BURST + 50)]
    before = threading.active_count()

    async def main() -> tuple[int, int, int, int]:
        store = await open_store(url)
        try:
            barrier = asyncio.Barrier(BURST)
            counts: list[int] = []

            async def one(i: int) -> str:
                async with store.transaction() as tx:
                    await barrier.wait()  # every transaction holds its thread at once
                    await tx.insert([writes[i]])
                    got = await tx.get(SCOPE, writes[i].record.id)
                    counts.append(threading.active_count())
                return got.id

            async def stream() -> int:
                n = 0
                async for page in store.list_pages(SCOPE, Filters(), batch_size=7):
                    n += len(page)
                return n

            ids = await asyncio.gather(*(one(i) for i in range(BURST)))
            assert ids == [w.record.id for w in writes[:BURST]]
            peak = max(counts)
            # the threads past the bound end; the store still works on the ones kept,
            # transactions and streams together
            after_burst = await asyncio.to_thread(_settled, before + 2 * THREADS + 1)
            barrier2 = asyncio.Barrier(50)

            async def two(i: int) -> None:
                async with store.transaction() as tx:
                    await barrier2.wait()
                    await tx.insert([writes[i]])

            listed = await asyncio.gather(
                *(two(i) for i in range(BURST, BURST + 50)), stream(), stream()
            )
            settled_again = await asyncio.to_thread(_settled, before + 2 * THREADS + 1)
            count = await store.count(SCOPE, Filters())
            streamed = [n for n in listed if isinstance(n, int)]
            assert all(n >= BURST for n in streamed), streamed
            return peak, after_burst, settled_again, count
        finally:
            await store.aclose()

    peak, after_burst, settled_again, count = asyncio.run(main())
    assert peak >= before + BURST // 2  # the burst did hold many threads at once
    # the loop's default executor (asyncio.to_thread) holds one or two threads too
    assert after_burst <= before + 2 * THREADS + 1, (before, peak, after_burst)
    assert settled_again <= before + 2 * THREADS + 1, (before, settled_again)
    assert count == BURST + 50  # every transaction committed
    assert _settled(before) <= before  # aclose joined every thread it made
