"""The thread an :class:`AsyncMemory` lives on, and its lifecycle.

One sync :class:`~memstrata.memory.Memory` per ``AsyncMemory``, built and used only on one
dedicated thread (a one-worker executor). A coroutine submits a call and awaits its result;
the event loop is free meanwhile. Calls run one at a time, in the order they were submitted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Self, TypeVar

from ..errors import StoreError

if TYPE_CHECKING:
    from ..memory import Memory

__all__ = ["ThreadConfinedMemory", "ThreadConfinedService"]

T = TypeVar("T")


class ThreadConfinedMemory:
    """Owns the thread and the sync memory on it; the generated subclass adds the methods."""

    def __init__(self, factory: Callable[[], Memory]) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memstrata-aio")
        self._closed = False
        # Built on its thread (opening SQLite, connecting to PostgreSQL, loading the embedder
        # never blocks the loop); an error is raised by ``open()`` and by every later call.
        self._opening: Future[Memory] = self._executor.submit(factory)

    def _call(self, fn: Callable[[Memory], T]) -> T:
        return fn(self._opening.result())  # on the memory's thread: already done

    async def _run(self, fn: Callable[[Memory], T]) -> T:
        if self._closed:
            raise StoreError("this AsyncMemory is closed: open a new one to keep using the store")
        loop = asyncio.get_running_loop()
        try:
            future = loop.run_in_executor(self._executor, self._call, fn)
        except RuntimeError as exc:  # closed from another thread between the check and here
            raise StoreError("this AsyncMemory is closed: open a new one") from exc
        return await future

    async def open(self) -> Self:
        """Wait until the memory is open; raises what ``Memory(...)`` would have raised."""
        await self._run(lambda m: None)
        return self

    async def aclose(self) -> None:
        """Close the memory on its thread (its background worker stops after its current
        job, as :meth:`Memory.close` does), then end the thread. Calls already submitted
        finish first; later calls raise :class:`StoreError`. Closing twice does nothing."""
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._executor, self._close_on_thread)
        finally:
            # joining the thread can take a moment: not on the loop
            await loop.run_in_executor(None, self._executor.shutdown)

    async def close(self) -> None:
        """Same as :meth:`aclose` (the name the sync :meth:`Memory.close` has)."""
        await self.aclose()

    def _close_on_thread(self) -> None:
        if self._opening.exception() is None:
            self._opening.result().close()

    @property
    def closed(self) -> bool:
        return self._closed

    async def __aenter__(self) -> Self:
        try:
            return await self.open()
        except BaseException:
            await self.aclose()
            raise

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class ThreadConfinedService:
    """Base of the async layer services (``mem.key``, ``mem.facts``, ...)."""

    __slots__ = ("_memory",)

    def __init__(self, memory: ThreadConfinedMemory) -> None:
        self._memory = memory

    async def _run(self, fn: Callable[[Memory], T]) -> T:
        return await self._memory._run(fn)
