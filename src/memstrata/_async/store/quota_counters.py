"""Quota and rate counters that are atomic across processes (issue 10 §5, issue 8 §3).

A quota check and its increment are one step: :meth:`AsyncQuotaCounters.take_counters` grows
every counter of a call by its amount, or — when one of them would pass its limit — changes
nothing and says which one refused. Several processes (API servers, workers) on one store can
therefore never admit more than a limit between them.

Where the counters live:

- **SQLite**: rows of the ``meta`` table, read and written in one ``BEGIN IMMEDIATE``
  transaction (SQLite serialises writers across processes).
- **PostgreSQL**: rows of ``meta``, created if missing, then ``SELECT ... FOR UPDATE`` in key
  order and updated in the same transaction (concurrent takers queue on the row locks).
- **memory://**: a dict under the store's lock (one process only, by nature).
- **Redis** (``buffer=redis://...``): a write-through mirror in front of the durable store,
  see :meth:`memstrata._async.store.redis_hot.AsyncRedisHotStore.take_counters`.

A count with no limit may instead ride on the caller's next write transaction (SQLite,
PostgreSQL: :mod:`memstrata.store.counted_writes`, session 33), committed with the write.

Leases (:meth:`AsyncQuotaCounters.lease`) serialise a check-then-write that a counter cannot
express, such as "records per user", where the count is the store's own.

Counter keys name no raw id (callers hash tenant and user, see :mod:`memstrata._async.quotas`).
The SQL that keeps them in ``meta`` is shared by the SQLite and PostgreSQL stores (both
the sync and the async one): :mod:`memstrata._async.store.shared_sql`. The values and the
rules without I/O (:class:`Take`, :class:`Refusal`, :func:`plan_takes`, the ``memory://``
dict functions) live in :mod:`memstrata.store.counter_types` and are re-exported here.

The async protocol is the source of truth for the sync one (this module is generated into
``memstrata/store/quota_counters.py``): the async PostgreSQL store has it natively, and the
thread adapter (:mod:`memstrata.aio.threaded`) gives it to SQLite and ``memory://``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from memstrata.store.counter_types import (
    SWEEP_BATCH,
    Refusal,
    Take,
    lease_free,
    lease_in,
    parse_count,
    plan_takes,
    release_in,
    take_in,
)

__all__ = [
    "SWEEP_BATCH",
    "AsyncQuotaCounters",
    "Refusal",
    "Take",
    "lease_free",
    "lease_in",
    "parse_count",
    "plan_takes",
    "release_in",
    "take_in",
]


@runtime_checkable
class AsyncQuotaCounters(Protocol):
    """Atomic counters and leases; implemented by every durable store and the Redis tier."""

    async def take_counters(self, takes: Sequence[Take]) -> Refusal | None:
        """All or nothing: every counter grows by its amount (``None`` returned), or nothing
        changes and the first take that would pass its limit is returned."""
        ...

    async def add_counters(self, takes: Sequence[Take]) -> None:
        """Add without a limit (negative amounts give a take back; never below 0)."""
        ...

    async def counter_values(self, keys: Sequence[str]) -> dict[str, int]:
        """The current value of each key (0 for a key never counted)."""
        ...

    async def forget_counters(self, keys: Sequence[str]) -> None:
        """Delete counters (a rate window that has passed)."""
        ...

    async def sweep_counters(self, now_us: int, limit: int = SWEEP_BATCH) -> int:
        """Delete counter rows of past periods that no take will sweep again (a user or a
        key that never came back), up to ``limit`` rows looked at from where the last
        call stopped; never one still counting at ``now_us`` (epoch microseconds) or the
        period before it (:func:`~memstrata.store.counter_types.stale_at_us`). How many
        rows went (``maintain``'s last step, session 30)."""
        ...

    async def lease(self, key: str, token: str, now_ms: int, until_ms: int) -> bool:
        """Hold ``key`` for ``token`` until ``until_ms`` (epoch ms); ``False`` if another
        token holds it past ``now_ms``. A holder that dies frees it when the lease ends."""
        ...

    async def release(self, key: str, token: str) -> None:
        """End ``token``'s lease on ``key`` (a no-op if it no longer holds it)."""
        ...

    async def count_tenant_records(self, tenant: str) -> int:
        """How many records the tenant holds, every user's, deleted and superseded ones
        included (the per-tenant ``max_records`` quota counts them under a lease)."""
        ...
