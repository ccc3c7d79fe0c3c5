"""SQLite and memory:// as AsyncStore on threads: same answers, atomic transactions, free loop."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memstrata.aio.stores import open_store
from memstrata.aio.threaded import ThreadedStore, threaded
from memstrata.errors import ConflictError, NotFoundError, ValidationError
from memstrata.filters import Filters
from memstrata.jobs import Job
from memstrata.scope import Scope
from memstrata.store import open_store as open_sync_store
from store.conftest import T0, Maker

SCOPE = Scope("t1", "u1")


@pytest.fixture(params=["sqlite", "memory"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'a.db'}" if request.param == "sqlite" else "memory://"


def test_reads_and_writes_answer_as_the_sync_store(url: str) -> None:
    maker = Maker()
    writes = [maker.write(text=f"alice likes tea number {i}") for i in range(5)]

    async def main() -> tuple[Any, ...]:
        store = await open_store(url)
        try:
            await store.insert(writes)
            got = await store.get(SCOPE, writes[0].record.id)
            many = await store.get_many(SCOPE, [w.record.id for w in writes[::-1]])
            listed = await store.list(SCOPE, Filters(), limit=3)
            count = await store.count(SCOPE, Filters())
            lexical = await store.lexical_search(SCOPE, ["tea"], 3, Filters())
            vector = await store.vector_search(SCOPE, writes[2].vector, 2, Filters())
            assert isinstance(store, ThreadedStore) and store.url == url
            return got, many, listed, count, lexical, vector
        finally:
            await store.aclose()

    got, many, listed, count, lexical, vector = asyncio.run(main())
    sync = open_sync_store("memory://")
    sync.insert(writes)
    assert got == sync.get(SCOPE, writes[0].record.id)
    assert many == sync.get_many(SCOPE, [w.record.id for w in writes[::-1]])
    assert listed == sync.list(SCOPE, Filters(), limit=3) and count == 5
    assert [c.id for c in lexical] == [
        c.id for c in sync.lexical_search(SCOPE, ["tea"], 3, Filters())
    ]
    assert vector[0].id == writes[2].record.id


def test_errors_are_the_sync_stores(url: str) -> None:
    maker = Maker()
    write = maker.write()

    async def main() -> None:
        store = await open_store(url)
        try:
            await store.insert([write])
            with pytest.raises(ValidationError):
                await store.insert([write])  # the same id twice
            with pytest.raises(NotFoundError):
                await store.get(SCOPE, "nope")
            with pytest.raises(ConflictError):
                await store.replace(SCOPE, write, expected_version=7)
            with pytest.raises(AttributeError):
                store.no_such_method  # noqa: B018
        finally:
            await store.aclose()

    asyncio.run(main())


def test_a_transaction_applies_whole_or_not_at_all(url: str) -> None:
    maker = Maker()
    a, b = maker.write(), maker.write()

    async def main() -> int:
        store = await open_store(url)
        try:
            async with store.transaction() as tx:
                await tx.insert([a])
                await tx.enqueue([Job("j1", "ingest", "t1", "u1", {}, T0, T0)])
            with pytest.raises(RuntimeError):
                async with store.transaction() as tx:
                    await tx.insert([b])
                    raise RuntimeError("boom")
            return await store.count(SCOPE, Filters())
        finally:
            await store.aclose()

    assert asyncio.run(main()) == 1


def test_cancelling_inside_a_transaction_rolls_it_back(tmp_path: Path) -> None:
    maker = Maker()
    a = maker.write()
    url = f"sqlite:///{tmp_path / 'c.db'}"

    async def main() -> int:
        store = await open_store(url)
        entered = asyncio.Event()

        async def writer() -> None:
            async with store.transaction() as tx:
                await tx.insert([a])
                entered.set()
                await asyncio.sleep(10)

        task = asyncio.create_task(writer())
        await entered.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        try:
            return await store.count(SCOPE, Filters())
        finally:
            await store.aclose()

    assert asyncio.run(main()) == 0


def test_scan_streams_every_batch(url: str) -> None:
    maker = Maker()
    writes = [maker.write() for _ in range(7)]

    async def main() -> list[int]:
        store = await open_store(url)
        try:
            await store.insert(writes)
            return [len(batch) async for batch in store.scan(3)]
        finally:
            await store.aclose()

    assert asyncio.run(main()) == [3, 3, 1]


class _SlowStore:
    """A sync store whose reads take a while (what a busy disk looks like)."""

    url = "slow://"

    def __init__(self) -> None:
        self.threads: set[str] = set()

    def count(self, scope: Scope, filters: Filters) -> int:
        self.threads.add(threading.current_thread().name)
        time.sleep(0.3)
        return 1

    def close(self) -> None:
        pass


def test_a_slow_call_never_blocks_the_loop_and_calls_overlap() -> None:
    slow = _SlowStore()

    async def main() -> tuple[int, float]:
        store = threaded(slow)  # type: ignore[arg-type]
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        start = time.perf_counter()
        await asyncio.gather(*(store.count(SCOPE, Filters()) for _ in range(3)))
        elapsed = time.perf_counter() - start
        task.cancel()
        await store.aclose()
        return ticks, elapsed

    ticks, elapsed = asyncio.run(main())
    assert ticks >= 10  # the loop ran meanwhile
    assert elapsed < 0.8  # three 0.3 s reads overlapped on the adapter's threads
    assert all(name.startswith("memstrata-store") for name in slow.threads)
