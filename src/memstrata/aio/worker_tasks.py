"""The asyncio side of the job worker: what ``memstrata._async.worker`` runs its heartbeat
and background loop on (tasks on the running loop instead of threads).

The same primitives as :mod:`memstrata.worker_threads` (``Async`` prefixed; ``async`` where
waiting is involved). Use them from the event loop's thread only.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

__all__ = ["AsyncFinished", "AsyncSignal", "AsyncSpawned", "spawn"]


class AsyncSignal:
    """A flag one task sets and another waits for (``asyncio.Event``)."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def set(self) -> None:
        self._event.set()

    def clear(self) -> None:
        self._event.clear()

    def is_set(self) -> bool:
        return self._event.is_set()

    async def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds; whether the flag is set."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._event.wait(), timeout)
        return self._event.is_set()


class AsyncFinished:
    """Notified whenever a claim ends; a waiter wakes at the next notification or after
    ``timeout``."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify_all(self) -> None:
        self._event.set()

    async def wait(self, timeout: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._event.wait(), timeout)
        self._event.clear()


class AsyncSpawned:
    """A task running ``target()`` on the running loop."""

    def __init__(self, target: Callable[[], Coroutine[Any, Any, None]], name: str) -> None:
        self._task = asyncio.get_running_loop().create_task(target(), name=name)

    def is_alive(self) -> bool:
        return not self._task.done()

    def is_current(self) -> bool:
        return asyncio.current_task() is self._task

    async def join(self, timeout: float | None = None) -> None:
        """Wait up to ``timeout`` seconds (``None``: as long as it takes) for the task to
        end; it is cancelled after that."""
        if self._task.done():
            return
        await asyncio.wait({self._task}, timeout=timeout)
        if not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


def spawn(target: Callable[[], Coroutine[Any, Any, None]], name: str) -> AsyncSpawned:
    """Start ``target()`` as a task named ``name`` on the running loop."""
    return AsyncSpawned(target, name)
