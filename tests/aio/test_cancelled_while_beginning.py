"""A call cancelled while its transaction begins on the adapter's thread (waiting for the
store's write lock, say) leaves no transaction open.

The loop decided whether to roll back by whether the transaction had begun, read when the
call was cancelled: a begin still running on the thread then was never ended, and the
thread held SQLite's write lock for good: every later write, and closing the store, waited
forever (the whole suite hung once in ``tests/audit21/test_cancelled_everywhere.py``, idle).
Likewise a store's sync context (``shared`` / ``exclusive``, entered and left on one thread)
entered on the thread after its caller was cancelled was never left. And a stream cancelled
again while it waited to close was never closed on its thread: the garbage collector closed
its generator later, on whatever thread (a read transaction ended off its connection's
thread, or, in a reference cycle, not for a long time).
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memstrata.aio.threaded import threaded
from memstrata.filters import Filters
from memstrata.scope import Scope
from memstrata.store.sqlite.store import SQLiteStore
from store.conftest import Maker

SCOPE = Scope("t1", "u1")


class _Slow:
    """Wraps a sync context factory: its ``__enter__`` waits until ``go`` is set; ``left``
    is set by its ``__exit__`` (not by a generator's finalizer, as a forgotten
    ``contextmanager`` would be, on whatever thread collects it)."""

    def __init__(self, factory: Any) -> None:
        self.factory = factory
        self.entering, self.go, self.left = threading.Event(), threading.Event(), threading.Event()
        self.inner: list[Any] = []

    def __call__(self, *args: Any, **kwargs: Any) -> _Slow:
        self.inner.append(self.factory(*args, **kwargs))
        return self

    def __enter__(self) -> Any:
        self.entering.set()
        assert self.go.wait(10)
        return self.inner[-1].__enter__()

    def __exit__(self, *exc: Any) -> Any:
        self.left.set()
        return self.inner[-1].__exit__(*exc)


async def _cancel_while_entering(slow: _Slow, body: Any) -> None:
    task = asyncio.create_task(body())
    assert await asyncio.to_thread(slow.entering.wait, 10)
    task.cancel()  # the enter runs on the thread: it cannot be stopped, only undone
    await asyncio.sleep(0.2)  # the caller has taken its cancellation (and ended, or waits)
    slow.go.set()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=10)
    assert await asyncio.to_thread(slow.left.wait, 10), "entered on the thread, never left"


def _in_a_child(scenario: Callable[[], None]) -> None:
    """Run ``scenario`` in a forked process: a lock held for good hangs that process (its
    threads cannot be stopped), not the test run."""
    ctx = mp.get_context("fork")
    errors = ctx.Queue()

    def run() -> None:
        try:
            scenario()
        except BaseException as exc:
            errors.put(f"{type(exc).__name__}: {exc}")
            errors.close()
            errors.join_thread()  # sent before the exit
            os._exit(1)
        os._exit(0)

    child = ctx.Process(target=run)
    child.start()
    child.join(90)
    if child.exitcode is None:
        child.kill()
        child.join()
        pytest.fail("hung: a transaction or a store context was left open on its thread")
    assert child.exitcode == 0, errors.get(timeout=10)


forks = pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="forks")


@forks
def test_a_transaction_cancelled_while_it_begins_is_rolled_back(tmp_path: Path) -> None:
    maker = Maker()
    first, second = maker.write(), maker.write()

    def scenario() -> None:
        sync = SQLiteStore(str(tmp_path / "c.db"))
        slow = _Slow(sync.transaction)
        sync.transaction = slow  # type: ignore[method-assign]

        async def main() -> None:
            store = threaded(sync)
            try:

                async def write() -> None:
                    async with store.transaction() as tx:
                        await tx.insert([first])
                        await tx.append_audit([])  # answers: the trip that begins it

                await _cancel_while_entering(slow, write)
                # the write lock is free: another write commits
                async with store.transaction() as tx:
                    await asyncio.wait_for(tx.insert([second]), timeout=10)
                    await asyncio.wait_for(tx.append_audit([]), timeout=10)
            finally:
                await asyncio.wait_for(store.aclose(), timeout=20)

        asyncio.run(main())

    _in_a_child(scenario)
    again = SQLiteStore(str(tmp_path / "c.db"))
    try:
        ids = {r.id for r in again.list(SCOPE, Filters(), limit=10)}
    finally:
        again.close()
    assert second.record.id in ids and first.record.id not in ids


@forks
@pytest.mark.parametrize("which", ["shared", "exclusive"])
def test_a_store_context_entered_after_its_caller_was_cancelled_is_left(
    tmp_path: Path, which: str
) -> None:
    def scenario() -> None:
        sync = SQLiteStore(str(tmp_path / "x.db"))
        slow = _Slow(contextlib.nullcontext)  # a store's lock, say
        setattr(sync, which, slow)

        async def main() -> None:
            store = threaded(sync)
            try:

                async def hold() -> None:
                    async with getattr(store, which)():
                        await asyncio.sleep(3600)

                await _cancel_while_entering(slow, hold)
            finally:
                await asyncio.wait_for(store.aclose(), timeout=20)

        asyncio.run(main())

    _in_a_child(scenario)


@forks
def test_a_stream_cancelled_twice_is_still_closed_on_its_thread(tmp_path: Path) -> None:
    """Cancelled while a batch is read, then again while it waits to close the stream: the
    close (queued behind the batch) ran nonetheless, and with it the generator's finally
    (a read transaction's end)."""

    def scenario() -> None:
        sync = SQLiteStore(str(tmp_path / "s.db"))
        reading, go, closed = threading.Event(), threading.Event(), threading.Event()
        closed_on: list[str] = []

        def scan(batch_size: int = 500) -> Iterator[list[object]]:
            try:
                reading.set()
                assert go.wait(10)
                yield []
            finally:
                closed_on.append(threading.current_thread().name)
                closed.set()

        sync.scan = scan  # type: ignore[method-assign,assignment]

        async def main() -> None:
            store = threaded(sync)
            try:

                async def read() -> None:
                    async for _batch in store.scan():
                        pass

                task = asyncio.create_task(read())
                assert await asyncio.to_thread(reading.wait, 10)
                task.cancel()
                await asyncio.sleep(0.2)  # in its finally, waiting for the close's turn
                task.cancel()
                await asyncio.sleep(0.2)
                go.set()
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait_for(task, timeout=10)
                assert await asyncio.to_thread(closed.wait, 10), "the stream was never closed"
                # by its close on its thread (not by the garbage collector, on any thread,
                # whenever it collects the generator)
                assert closed_on[0].startswith("memstrata-tx"), closed_on
            finally:
                await asyncio.wait_for(store.aclose(), timeout=20)

        asyncio.run(main())

    _in_a_child(scenario)
