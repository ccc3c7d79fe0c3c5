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

__all__ = ["CONTEXT_POOL", "SEARCH_POOL", "Pending", "join", "settle", "spawn"]

P = ParamSpec("P")
T = TypeVar("T")

SEARCH_POOL = None
CONTEXT_POOL = None

Pending = asyncio.Task

# Tasks still running: the loop holds tasks weakly, and a job whose caller raised before
# joining it (an error elsewhere in the same search or build) must still run to its end, as
# the sync twin's thread does, not vanish mid-read.
_RUNNING: set[asyncio.Task[Any]] = set()


def _done(task: asyncio.Task[Any]) -> None:
    _RUNNING.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved: an unjoined job's error is dropped, as a Future's is


def spawn(
    pool: None,
    fn: Callable[P, Coroutine[Any, Any, T]],
    /,
    *args: P.args,
    **kwargs: P.kwargs,
) -> asyncio.Task[T]:
    """``fn(*args, **kwargs)`` started as a task (``pool``: see the module's docstring)."""
    task = asyncio.create_task(fn(*args, **kwargs))
    _RUNNING.add(task)
    task.add_done_callback(_done)
    return task


async def join(job: Awaitable[T]) -> T:
    """The result of a :func:`spawn` (its exception re-raised)."""
    return await job


async def settle(job: asyncio.Task[T]) -> None:
    """Wait for a :func:`spawn` to end, without its result or error: a caller that raised
    lets no read of its own run on after it (a store closed next, a test's teardown)."""
    await asyncio.wait([job])
