"""The async shell of search and context concurrency: tasks (the sync shell,
:mod:`memstrata.search.search_tasks`, has the same names over threads).

``spawn(pool, fn, *args)`` starts the coroutine ``fn(*args)`` as a task of the running loop
(``pool`` is the sync twin's thread pool; here there is none, so it is ``None`` and
ignored) and ``await join(job)`` collects it: the reads a search or ``build_context``
starts this way run concurrently, as ``asyncio.gather`` would run them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

__all__ = ["CONTEXT_POOL", "SEARCH_POOL", "Pending", "join", "spawn"]

P = ParamSpec("P")
T = TypeVar("T")

SEARCH_POOL = None
CONTEXT_POOL = None

Pending = asyncio.Task


def spawn(
    pool: None,
    fn: Callable[P, Coroutine[Any, Any, T]],
    /,
    *args: P.args,
    **kwargs: P.kwargs,
) -> asyncio.Task[T]:
    """``fn(*args, **kwargs)`` started as a task (``pool``: see the module's docstring)."""
    return asyncio.create_task(fn(*args, **kwargs))


async def join(job: Awaitable[T]) -> T:
    """The result of a :func:`spawn` (its exception re-raised)."""
    return await job
