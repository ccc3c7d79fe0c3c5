"""A transaction on the threaded adapter: answerless writes queued, one trip to the thread.

``add_messages`` writes its turns and their job and commits: one trip (it was four, each
holding SQLite's write lock while it waited for a busy event loop to hand the thread back
the next call).
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from memstrata.aio import threaded as threaded_module
from memstrata.aio.stores import open_store
from memstrata.errors import StoreError, ValidationError
from memstrata.filters import Filters
from memstrata.jobs import Job
from memstrata.scope import Scope
from memstrata.store import open_store as open_sync_store
from store.conftest import T0, Maker

SCOPE = Scope("t1", "u1")


@pytest.fixture(params=["sqlite", "memory"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'a.db'}" if request.param == "sqlite" else "memory://"


def _count_trips(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    trips = [0]
    run = threaded_module._OneThread.run

    async def counted(self: threaded_module._OneThread, fn: object) -> object:
        trips[0] += 1
        return await run(self, fn)  # type: ignore[arg-type]

    monkeypatch.setattr(threaded_module._OneThread, "run", counted)
    return trips


def test_writes_and_commit_are_one_trip(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    maker = Maker()
    a, b = maker.write(), maker.write()
    trips = _count_trips(monkeypatch)

    async def main() -> int:
        store = await open_store(url)
        try:
            async with store.transaction() as tx:
                await tx.insert([a])
                await tx.enqueue([Job("j1", "ingest", "t1", "u1", {}, T0, T0)])
                await tx.insert([b])
            assert trips[0] == 1
            return await store.count(SCOPE, Filters())
        finally:
            await store.aclose()

    assert asyncio.run(main()) == 2


def test_a_read_sees_the_queued_writes_before_it(url: str) -> None:
    maker = Maker()
    a = maker.write()

    async def main() -> str:
        store = await open_store(url)
        try:
            async with store.transaction() as tx:
                await tx.insert([a])
                got = await tx.get(SCOPE, a.record.id)
            return got.id
        finally:
            await store.aclose()

    assert asyncio.run(main()) == a.record.id


def test_a_queued_writes_error_ends_the_block_and_nothing_is_written(url: str) -> None:
    maker = Maker()
    a, b = maker.write(), maker.write()

    async def main() -> int:
        store = await open_store(url)
        try:
            await store.insert([a])
            with pytest.raises(ValidationError):
                async with store.transaction() as tx:
                    await tx.insert([b])
                    await tx.insert([a])  # the same id again: raised by the commit's trip
            # the failed transaction left nothing behind, and the store still writes
            async with store.transaction() as tx:
                await tx.enqueue([Job("j2", "ingest", "t1", "u1", {}, T0, T0)])
            return await store.count(SCOPE, Filters())
        finally:
            await store.aclose()

    assert asyncio.run(main()) == 1


def test_no_write_lock_is_held_while_the_block_waits(tmp_path: Path) -> None:
    """Before the first trip nothing has begun: another writer of the file (another
    process) is not kept waiting by a block that has only queued writes and waits on
    something else."""
    maker = Maker()
    a, b = maker.write(), maker.write()
    url = f"sqlite:///{tmp_path / 'w.db'}"

    async def main() -> int:
        store = await open_store(url)
        other = open_sync_store(url)
        try:
            async with store.transaction() as tx:
                await tx.insert([a])
                await asyncio.wait_for(asyncio.to_thread(other.insert, [b]), timeout=5)
            return await store.count(SCOPE, Filters())
        finally:
            other.close()
            await store.aclose()

    assert asyncio.run(main()) == 2


def test_a_cancelled_callers_failed_commit_is_not_an_unretrieved_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A caller cancelled while its commit runs on the thread: the commit goes on (shielded)
    and here fails (as when the memory closed meanwhile). Its error reached no one, and
    asyncio logged "Task exception was never retrieved" as an ERROR (audit21's cancelled-
    write test caught it now and then); now it is a warning of the adapter's."""
    sync = open_sync_store(f"sqlite:///{tmp_path / 'a.db'}")
    gate = threading.Event()

    @contextmanager
    def failing() -> Iterator[Any]:
        gate.wait(10)
        raise StoreError("the store was closed meanwhile")
        yield  # a generator context manager

    sync.transaction = failing  # type: ignore[method-assign]
    store = threaded_module.threaded(sync)
    record = Maker().write()

    async def write() -> None:
        async with store.transaction() as tx:
            await tx.insert([record])  # queued: the transaction begins at the commit

    async def main() -> None:
        task = asyncio.create_task(write())
        await asyncio.sleep(0.2)  # the commit waits at the gate, on the thread
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        gate.set()
        await asyncio.sleep(0.3)  # the commit fails on its thread

    with caplog.at_level("WARNING"):
        asyncio.run(main())
        del main
        gc.collect()
    sync.close()
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == []
    assert any("did not end cleanly" in r.getMessage() for r in caplog.records)
