"""The sync shell of search and context concurrency: threads (the async shell,
:mod:`memstrata.aio.search_tasks`, has the same names over tasks).

The sources in ``_async/search`` and ``_async/context`` start a read with
``spawn(pool, fn, *args)`` and collect it with ``join(job)``; their sync twins import this
module, so those reads run on the process-wide pools below, as they always have.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import ParamSpec, Protocol, TypeVar

__all__ = ["CONTEXT_POOL", "SEARCH_POOL", "Pending", "join", "settle", "spawn"]

P = ParamSpec("P")
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

# The lexical list of a search runs beside the query's embedding and dense list.
SEARCH_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memstrata-search")
# build_context's layer reads (key, task, history, summaries, facts, clusters, neighbours).
CONTEXT_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="memstrata-context")

Pending = Future


class _Result(Protocol[T_co]):
    def result(self) -> T_co: ...


def spawn(
    pool: ThreadPoolExecutor, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
) -> Future[T]:
    """``fn(*args, **kwargs)`` started on ``pool``."""
    return pool.submit(fn, *args, **kwargs)


def join(job: _Result[T]) -> T:
    """The result of a :func:`spawn` (its exception re-raised)."""
    return job.result()


def settle(job: Future[T]) -> None:
    """Wait for a :func:`spawn` to end, without its result or error: a caller that raised
    lets no read of its own run on after it (a store closed next, a test's teardown)."""
    wait([job])
