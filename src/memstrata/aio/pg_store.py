"""The PostgreSQL store, natively async (psycopg's async API), for async callers.

    store = await open_postgres("postgresql://user:pw@host/db?schema=mem")
    try:
        await store.insert(writes)
    finally:
        await store.aclose()

:class:`AsyncPostgresStore` implements :class:`memstrata._async.store.base.AsyncStore`; its
source is ``memstrata/_async/store/postgres/store.py``, from which the sync
:class:`memstrata.store.postgres.PostgresStore` is generated.
"""

from __future__ import annotations

from memstrata._async.store.postgres.store import AsyncPostgresStore
from memstrata.store.vector_bound import VECTOR_CACHE_ROWS

__all__ = ["AsyncPostgresStore", "open_postgres"]


async def open_postgres(
    url: str, *, vector_cache_rows: int = VECTOR_CACHE_ROWS
) -> AsyncPostgresStore:
    """Connect to ``url`` (migrating its schema on first use) and open the pool."""
    return await AsyncPostgresStore(url, vector_cache_rows=vector_cache_rows).open()
