"""What the async quotas and the async Redis tier ask of a store's quota counters.

PostgreSQL's are natively async; SQLite's and ``memory://``'s are the sync store's methods,
which the thread adapter (:mod:`memstrata.aio.threaded`) presents as coroutines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ..store.quota_counters import Refusal, Take

__all__ = ["AsyncQuotaCounters"]


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
