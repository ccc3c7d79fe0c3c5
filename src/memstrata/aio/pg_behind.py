"""The async store's shells for what the sync PostgreSQL store does on threads.

The async twin of :mod:`memstrata.store.postgres.behind` (same names once ``Async`` is
stripped), imported by ``memstrata._async.store.postgres.store`` on ``# async-only`` lines:

- :class:`AsyncWriteBehind`: a search's counter and cache writes run as tasks of the loop,
  one after another in the order submitted, so the search returns without them (as the
  sync store's background thread does); every other use of the store first waits for
  them (:meth:`~AsyncWriteBehind.settle`, or :meth:`~AsyncWriteBehind.settle_rows` for the
  rows it reads), so a coroutine still reads its process's own writes. A failed write is
  logged, not raised (the Counters contract allows losing it). :class:`Statement` writes
  queued together commit in one transaction, as on the sync store: both make a batch with
  ``memstrata/_async/store/postgres/batches.py`` (here the async source itself).
- :func:`background` / :func:`wait_done`: the statistics refresh runs as an asyncio task
  instead of a daemon thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Hashable, Iterable
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from typing import Any

from .._async.store.postgres.batches import AsyncStatementBatches
from ..store.postgres.behind_types import Statement, log_failed

__all__ = ["AsyncHeld", "AsyncWriteBehind", "Statement", "background", "wait_done"]
# Set inside a write's own task: the store calls it makes never wait for themselves.
_inside: ContextVar[bool] = ContextVar("memstrata_pg_behind", default=False)


class AsyncWriteBehind:
    """``transaction()``: the transaction :class:`Statement` writes are made in."""

    def __init__(
        self,
        name: str,
        transaction: Callable[[], AbstractAsyncContextManager[Any]] | None = None,
    ) -> None:
        self._name = name
        self._pending: dict[asyncio.Task[None], tuple[Hashable, ...]] = {}  # task -> rows
        self._last: asyncio.Task[None] | None = None
        self._batches = AsyncStatementBatches(transaction)  # queue changed on the loop

    async def submit(
        self, write: Callable[[], Awaitable[None]] | Statement, rows: Iterable[Hashable] = ()
    ) -> None:
        """Start ``write`` after the writes submitted before it; ``rows`` are the keys of
        the rows it changes (see :meth:`settle_rows`). A :class:`Statement` joins the
        statements queued just before it that no transaction has taken yet."""
        before = self._last
        group = self._batches.join(write)

        async def run() -> None:
            _inside.set(True)  # this task's own context
            if before is not None:
                await asyncio.wait([before])  # in order, as on the sync store's one thread
            try:
                if group is not None:
                    await self._batches.make(self._batches.take(group))
                elif not isinstance(write, Statement):
                    await write()
            except Exception as exc:  # a counter or cache entry: logged, the search returned
                log_failed(exc)

        task = asyncio.get_running_loop().create_task(run(), name=f"{self._name}-behind")
        self._pending[task] = tuple(rows)
        task.add_done_callback(self._done)
        self._last = task

    def _done(self, task: asyncio.Task[None]) -> None:
        self._pending.pop(task, None)
        if self._last is task:
            self._last = None

    async def settle(self) -> None:
        """Wait until every write submitted so far is made (not inside such a write)."""
        if self._pending and not _inside.get():
            await asyncio.wait(list(self._pending))

    def pending_rows(self) -> frozenset[Hashable]:
        """The rows the writes not yet made change."""
        return frozenset(k for keys in self._pending.values() for k in keys)

    async def settle_rows(self, rows: Collection[Hashable]) -> None:
        """Wait only while a pending write changes one of ``rows``."""
        if not self._pending or _inside.get():
            return
        wanted = rows if isinstance(rows, set | frozenset) else set(rows)  # a list: O(n) `in`
        waiting = [t for t, keys in self._pending.items() if not wanted.isdisjoint(keys)]
        if waiting:
            await asyncio.wait(waiting)

    async def aclose(self) -> None:
        """Make the pending writes."""
        await self.settle()


class AsyncHeld:
    """How many pool connections the current task holds (nested uses), so it never waits
    for the writes behind a search while holding one. Per task, as the sync store's count
    is per thread: a task started inside the call (``asyncio.gather``) inherits it."""

    def __init__(self) -> None:
        self._count: ContextVar[int] = ContextVar(f"memstrata_pg_held_{id(self)}", default=0)

    @property
    def n(self) -> int:
        return self._count.get()

    @n.setter
    def n(self, value: int) -> None:
        self._count.set(value)


def background(target: Callable[[], Awaitable[None]], name: str) -> asyncio.Task[None]:
    """Run ``target()`` as a task of the running loop (the sync shell: a daemon thread)."""

    async def run() -> None:
        await target()

    return asyncio.get_running_loop().create_task(run(), name=name)


async def wait_done(handle: asyncio.Task[None]) -> None:
    """Wait until ``handle`` (from :func:`background`) is done."""
    await asyncio.wait([handle])
