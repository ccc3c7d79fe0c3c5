"""What only an async memory has: opening on first use, refusing calls once closed, and
calls that run to their end when their caller is cancelled.

``AsyncMemory`` (``memstrata/_async/memory.py``) inherits :class:`AsyncLifecycle`; its sync
twin ``Memory`` opens in its constructor and needs none of this.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, Concatenate, ParamSpec, Self, TypeVar

from ..errors import StoreError

__all__ = ["AsyncLifecycle", "completes"]

T = TypeVar("T")
P = ParamSpec("P")
L = TypeVar("L", bound="AsyncLifecycle")

log = logging.getLogger("memstrata.aio")
# Set in the task of a call that runs to its end: the calls it makes itself (end_session's
# flush) are still served while aclose waits for it.
_STARTED: ContextVar[bool] = ContextVar("memstrata_started", default=False)


def completes(
    fn: Callable[Concatenate[L, P], Awaitable[T]],
) -> Callable[Concatenate[L, P], Awaitable[T]]:
    """A call that commits several times (a write and its audit event, a purge and the
    re-derivations it needs, a maintenance pass) runs to its end once started, even if its
    caller is cancelled (the result is dropped): cancelling never leaves half of it, and
    ``aclose`` waits for it before closing the store. Its error, once its caller has gone,
    is logged (``memstrata.aio``), not lost. A call that commits once (add, add_messages,
    update, import) is simply cancelled."""

    @functools.wraps(fn)
    async def run(self: L, /, *args: P.args, **kwargs: P.kwargs) -> T:
        started = _STARTED.set(True)  # the task's context: its own calls pass a closing memory
        try:
            task = asyncio.ensure_future(fn(self, *args, **kwargs))
        finally:
            _STARTED.reset(started)
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.cancelled():
                task.add_done_callback(functools.partial(_orphaned, fn.__name__))
            raise

    return run


def _orphaned(name: str, task: asyncio.Future[Any]) -> None:
    """The end of a call whose caller was cancelled: its error goes to the log."""
    if not task.cancelled() and (error := task.exception()) is not None:
        log.error(
            "%s, whose caller was cancelled, failed after it: %r", name, error, exc_info=error
        )


class AsyncLifecycle:
    """Open on first use (or ``await open()`` / ``async with``); refuse calls once closed."""

    _opened: bool
    _closed: bool
    _owned: list[Callable[[], Awaitable[None]]]  # what aclose() ends besides the store
    _running: set[asyncio.Future[Any]]  # calls that run to their end (completes)
    _shutting: asyncio.Future[None] | None = None  # aclose's work, once

    async def _open(self) -> Any:
        raise NotImplementedError

    async def open(self) -> Self:
        """Open the store, the providers and the background worker (once)."""
        await self._ready()
        return self

    async def _ready(self) -> None:
        """Every call's first step: open on first use, refuse once closed."""
        if self._closed and not (self._opened and _STARTED.get()):
            raise StoreError(  # a server shutting down: its replacement answers
                "this AsyncMemory is closed: open a new one to keep using the store",
                retryable=True,
            )
        if not self._opened:
            await self._open()

    async def _closing(self, shut: Callable[[], Awaitable[None]]) -> None:
        """``aclose``: refuse calls from now on and run ``shut`` (``aclose`` itself, which
        then finds itself in :meth:`_shutting_here`) once, as a task, to its end even if the
        closing caller is cancelled (a close cancelled half way left the store open and its
        threads running, and a second ``aclose`` returned at once); a second ``aclose``
        waits for the first."""
        if self._shutting is None:
            self._closed = True
            self._shutting = asyncio.ensure_future(shut())
        try:
            await asyncio.shield(self._shutting)
        except asyncio.CancelledError:
            if not self._shutting.cancelled():
                self._shutting.add_done_callback(functools.partial(_orphaned, "aclose"))
            raise

    def _shutting_here(self) -> bool:
        """Whether this is the task of :meth:`_closing`."""
        return self._shutting is not None and asyncio.current_task() is self._shutting

    async def _finish_started(self) -> None:
        """``aclose``'s first step: the calls that run to their end (:func:`completes`)
        still running, their callers cancelled, end before the store is closed."""
        while self._running:
            await asyncio.wait(set(self._running))

    def _usable(self) -> None:
        """A layer namespace's check (a property cannot open the memory)."""
        if (self._closed and not _STARTED.get()) or not self._opened:
            state = "closed" if self._closed else "not open yet (await mem.open())"
            raise StoreError(f"this AsyncMemory is {state}")

    @property
    def closed(self) -> bool:
        """Whether :meth:`aclose` was called."""
        return self._closed
