"""Open the async store a URL names (the async twin of :func:`memstrata.store.url.open_store`).

``sqlite://`` and ``memory://`` stores are the sync ones on threads of their own
(:func:`memstrata.aio.threaded.threaded`: the standard library's ``sqlite3`` has no async
API, and a local file needs none); ``postgresql://`` is natively async (psycopg's async
connections; its schema migrations run on them too). Opening SQLite runs on a thread, so the
event loop never waits for a migration.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, cast

from ..store.url import open_store as open_sync_store
from ..store.vector_bound import VECTOR_CACHE_ROWS, check_vector_cache_rows
from .threaded import threaded

if TYPE_CHECKING:
    from .._async.store.base import AsyncStore

__all__ = ["open_store"]


async def open_store(url: str, *, vector_cache_rows: int | None = None) -> AsyncStore:
    """The store ``url`` names, as an ``AsyncStore`` (errors and ``vector_cache_rows`` as the
    sync ``open_store``)."""
    rows = VECTOR_CACHE_ROWS if vector_cache_rows is None else vector_cache_rows
    rows = check_vector_cache_rows(rows)
    if isinstance(url, str) and url.split("://", 1)[0].lower() in ("postgresql", "postgres"):
        try:
            from .pg_store import open_postgres
        except ModuleNotFoundError:  # the sync opener names the missing extra
            open_sync_store(url)
            raise
        return cast("AsyncStore", await open_postgres(url, vector_cache_rows=rows))
    opened = await asyncio.to_thread(open_sync_store, url, vector_cache_rows=rows)
    return threaded(opened)
