"""What only an async memory has: opening on first use, refusing calls once closed, and
calls that run to their end when their caller is cancelled.

``AsyncMemory`` (``memstrata/_async/memory.py``) inherits :class:`AsyncLifecycle`; its sync
twin ``Memory`` opens in its constructor and needs none of this.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, Self, TypeVar

from ..errors import StoreError

__all__ = ["AsyncLifecycle", "completes"]

T = TypeVar("T")
P = ParamSpec("P")


def completes(fn: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """A call that commits several times (a write and its audit event, a purge and the
    re-derivations it needs, a maintenance pass) runs to its end once started, even if its
    caller is cancelled (the result is dropped): cancelling never leaves half of it. A call
    that commits once (add, add_messages, update, import) is simply cancelled."""

    @functools.wraps(fn)
    async def run(*args: P.args, **kwargs: P.kwargs) -> T:
        task = asyncio.ensure_future(fn(*args, **kwargs))
        task.add_done_callback(_retrieved)
        return await asyncio.shield(task)

    return run


def _retrieved(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()  # an error nobody awaits any more is not logged as lost


class AsyncLifecycle:
    """Open on first use (or ``await open()`` / ``async with``); refuse calls once closed."""

    _opened: bool
    _closed: bool
    _owned: list[Callable[[], Awaitable[None]]]  # what aclose() ends besides the store

    async def _open(self) -> Any:
        raise NotImplementedError

    async def open(self) -> Self:
        """Open the store, the providers and the background worker (once)."""
        await self._ready()
        return self

    async def _ready(self) -> None:
        """Every call's first step: open on first use, refuse once closed."""
        if self._closed:
            raise StoreError("this AsyncMemory is closed: open a new one to keep using the store")
        if not self._opened:
            await self._open()

    def _usable(self) -> None:
        """A layer namespace's check (a property cannot open the memory)."""
        if self._closed or not self._opened:
            state = "closed" if self._closed else "not open yet (await mem.open())"
            raise StoreError(f"this AsyncMemory is {state}")

    @property
    def closed(self) -> bool:
        """Whether :meth:`aclose` was called."""
        return self._closed
