"""How the server makes one call of the memory: awaited (``AsyncMemory``) or on a worker
thread (a sync ``Memory``). The server's code is written once against ``AsyncMemory``'s API
and takes one of these; see :mod:`memstrata.server.backend`."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import ParamSpec, Protocol, TypeVar, cast

import anyio.to_thread

__all__ = ["Call", "awaited", "in_thread"]

P = ParamSpec("P")
T = TypeVar("T")


class Call(Protocol):
    """``await call(fn, *args, **kwargs)``: one call of the memory."""

    async def __call__(
        self, fn: Callable[P, Awaitable[T]], /, *args: P.args, **kwargs: P.kwargs
    ) -> T: ...


async def awaited(fn: Callable[P, Awaitable[T]], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """An ``AsyncMemory``'s call: awaited on the event loop, no thread."""
    return await fn(*args, **kwargs)


async def in_thread(fn: Callable[P, Awaitable[T]], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """A sync ``Memory``'s call: ``fn`` is the sync twin's method (typed as the async one's,
    whose awaited result it returns), run on a worker thread."""
    sync = cast(Callable[..., T], fn)
    return await anyio.to_thread.run_sync(functools.partial(sync, *args, **kwargs))
