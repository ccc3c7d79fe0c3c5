"""The async store's shells for what the sync PostgreSQL store does on threads.

The async twin of :mod:`memstrata.store.postgres.behind` (same names once ``Async`` is
stripped), imported by ``memstrata._async.store.postgres.store`` on ``# async-only`` lines:

- :class:`AsyncWriteBehind`: the sync store runs a search's counter and cache writes on a
  background thread so the search returns without them. Here they are simply awaited where
  they are submitted (the search's coroutine makes them before it returns; other coroutines
  run meanwhile), so nothing is ever pending: :meth:`settle` and :meth:`settle_rows` have
  nothing to wait for and :meth:`pending_rows` is empty. A failed write is logged, not
  raised, as on the thread (the Counters contract allows losing it).
- :func:`background` / :func:`wait_done`: the statistics refresh runs as an asyncio task
  instead of a daemon thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection, Hashable, Iterable

__all__ = ["AsyncWriteBehind", "background", "wait_done"]

_log = logging.getLogger("memstrata.store.postgres")


class AsyncWriteBehind:
    def __init__(self, name: str) -> None:
        self._name = name

    async def submit(
        self, write: Callable[[], Awaitable[None]], rows: Iterable[Hashable] = ()
    ) -> None:
        """Make ``write`` now (``rows``: unused, nothing is left pending)."""
        try:
            await write()
        except Exception as exc:  # a counter or cache entry: logged, as on the sync thread
            _log.warning("memstrata: a counter or cache write after a search failed: %s", exc)

    async def settle(self) -> None:
        """Nothing to wait for: every write was made when submitted."""

    def pending_rows(self) -> frozenset[Hashable]:
        return frozenset()

    async def settle_rows(self, rows: Collection[Hashable]) -> None:
        """Nothing to wait for (see :meth:`settle`)."""

    async def aclose(self) -> None:
        """Nothing to stop."""


def background(target: Callable[[], Awaitable[None]], name: str) -> asyncio.Task[None]:
    """Run ``target()`` as a task of the running loop (the sync shell: a daemon thread)."""

    async def run() -> None:
        await target()

    return asyncio.get_running_loop().create_task(run(), name=name)


async def wait_done(handle: asyncio.Task[None]) -> None:
    """Wait until ``handle`` (from :func:`background`) is done."""
    await asyncio.wait([handle])
