"""A store call whose effect a cancelled caller must give back (a lease, a counter taken).

A coroutine cancelled while it awaits a store call cannot tell whether the call happened:
SQLite's runs on a thread of the store's that goes on to its end, and PostgreSQL may have
committed the statement before the cancellation reached it. For a call that takes
something (a records lease, a day's embeddings), not knowing would keep it taken: a lease
nobody holds makes the next writer wait until it runs out. :func:`given_back` waits for the
call to end and undoes it, then lets the cancellation go on. The giving back at the end of
a block (a lease released in a ``finally``) is the same hazard when the cancellation lands
there: :func:`to_the_end` runs it to its end anyway. The sync twin of a source that uses
them calls the store directly (a sync call is never cancelled half way).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

__all__ = ["given_back", "to_the_end"]

T = TypeVar("T")

log = logging.getLogger("memstrata.aio")


async def given_back(call: Awaitable[T], undo: Callable[[T], Awaitable[object]]) -> T:
    """``await call``; cancelled meanwhile, ``call`` still runs to its end, ``undo`` gets
    its result (a failed call has nothing to undo), and the cancellation goes on."""
    task = asyncio.ensure_future(call)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        # a second cancellation leaves the giving back running on its own
        await asyncio.shield(asyncio.ensure_future(_undo(task, undo)))
        raise


async def _undo(task: asyncio.Future[T], undo: Callable[[T], Awaitable[object]]) -> None:
    try:
        result = await task
    except Exception:  # it failed: it took nothing
        return
    try:
        await undo(result)
    except Exception as exc:  # what a cancelled write took could not be given back
        log.error("giving back what a cancelled call took failed: %r", exc, exc_info=exc)


async def to_the_end(
    call: Awaitable[T],
    *,
    unheard: str = "a cleanup whose caller was cancelled failed",
    level: int = logging.ERROR,
) -> T:
    """``await call``, which runs to its end even if the caller is cancelled meanwhile (the
    cancellation then goes on at once, the call in the background). An error of a call
    whose caller was cancelled reaches no one: it is logged (``unheard: error``, at
    ``level``) rather than left to asyncio's "Task exception was never retrieved"."""
    task = asyncio.ensure_future(call)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        task.add_done_callback(functools.partial(_logged, unheard=unheard, level=level))
        raise


def _logged(task: asyncio.Future[Any], *, unheard: str, level: int) -> None:
    if not task.cancelled() and (error := task.exception()) is not None:
        exc_info = error if level >= logging.ERROR else None
        log.log(level, "%s: %r", unheard, error, exc_info=exc_info)
