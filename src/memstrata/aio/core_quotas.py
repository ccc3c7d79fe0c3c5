"""Quota counters of an async store (what ``memstrata._async.quotas`` counts with).

A store whose counters are natively async (PostgreSQL through psycopg's async API, Redis
through ``redis.asyncio``) is used as it is. A store presented as async over a sync one
(SQLite and ``memory://`` through the thread adapter, which exposes the sync store as
``sync``) has its sync :class:`~memstrata.store.quota_counters.QuotaCounters`
awaited through a worker thread.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ..store.quota_counters import QuotaCounters, Refusal, Take

__all__ = ["AsyncQuotaCounters", "AsyncThreadCounters", "quota_counters"]


@runtime_checkable
class AsyncQuotaCounters(Protocol):
    """:class:`~memstrata.store.quota_counters.QuotaCounters` with ``await``."""

    async def take_counters(self, takes: Sequence[Take]) -> Refusal | None: ...
    async def add_counters(self, takes: Sequence[Take]) -> None: ...
    async def counter_values(self, keys: Sequence[str]) -> dict[str, int]: ...
    async def forget_counters(self, keys: Sequence[str]) -> None: ...
    async def lease(self, key: str, token: str, now_ms: int, until_ms: int) -> bool: ...
    async def release(self, key: str, token: str) -> None: ...
    async def count_tenant_records(self, tenant: str) -> int: ...


class AsyncThreadCounters:
    """Sync quota counters awaited through a worker thread."""

    def __init__(self, counters: QuotaCounters) -> None:
        self._counters = counters

    async def take_counters(self, takes: Sequence[Take]) -> Refusal | None:
        return await asyncio.to_thread(self._counters.take_counters, takes)

    async def add_counters(self, takes: Sequence[Take]) -> None:
        await asyncio.to_thread(self._counters.add_counters, takes)

    async def counter_values(self, keys: Sequence[str]) -> dict[str, int]:
        return await asyncio.to_thread(self._counters.counter_values, keys)

    async def forget_counters(self, keys: Sequence[str]) -> None:
        await asyncio.to_thread(self._counters.forget_counters, keys)

    async def lease(self, key: str, token: str, now_ms: int, until_ms: int) -> bool:
        return await asyncio.to_thread(self._counters.lease, key, token, now_ms, until_ms)

    async def release(self, key: str, token: str) -> None:
        await asyncio.to_thread(self._counters.release, key, token)

    async def count_tenant_records(self, tenant: str) -> int:
        return await asyncio.to_thread(self._counters.count_tenant_records, tenant)


def quota_counters(store: object) -> object:
    """The async counters of ``store``, or ``store`` itself when it has none (the caller
    then refuses it with a clear error)."""
    take = getattr(store, "take_counters", None)
    if take is not None and inspect.iscoroutinefunction(take):
        return store
    sync = getattr(store, "sync", None)
    if isinstance(sync, QuotaCounters):
        return AsyncThreadCounters(sync)
    return store
