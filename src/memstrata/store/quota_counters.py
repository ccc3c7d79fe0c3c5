"""Quota and rate counters that are atomic across processes (issue 10 §5, issue 8 §3).

A quota check and its increment are one step: :meth:`QuotaCounters.take_counters` grows
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
  see :meth:`memstrata.store.redis_hot.RedisHotStore.take_counters`.

Leases (:meth:`QuotaCounters.lease`) serialise a check-then-write that a counter cannot
express, such as "records per user", where the count is the store's own.

Counter keys name no raw id (callers hash tenant and user, see :mod:`memstrata.quotas`).
The SQL that keeps them in ``meta`` is shared by the SQLite and PostgreSQL stores (both
the sync and the async one): :mod:`memstrata.store.shared_sql`, generated from its async
source.
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..errors import ValidationError

__all__ = [
    "QuotaCounters",
    "Refusal",
    "Take",
    "parse_count",
    "plan_takes",
    "lease_free",
    "lease_in",
    "release_in",
    "take_in",
]


@dataclass(frozen=True, slots=True)
class Take:
    """Add ``amount`` to counter ``key`` if it stays ``<= limit`` (``None``: no limit).

    ``ttl_seconds`` is how long the counter matters (a window's end); stores that expire keys
    (Redis) use it, the durable stores keep the row until it is forgotten or purged."""

    key: str
    amount: int
    limit: int | None = None
    ttl_seconds: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not self.key:
            raise ValidationError("a counter key must be a non-empty string")
        if isinstance(self.amount, bool) or not isinstance(self.amount, int):
            raise ValidationError(f"a counter amount must be an integer, got {self.amount!r}")


@dataclass(frozen=True, slots=True)
class Refusal:
    """The take that would have passed its limit: its index in the call and the counter's
    value before the call (nothing was changed)."""

    index: int
    used: int


@runtime_checkable
class QuotaCounters(Protocol):
    """Atomic counters and leases; implemented by every durable store and the Redis tier."""

    def take_counters(self, takes: Sequence[Take]) -> Refusal | None:
        """All or nothing: every counter grows by its amount (``None`` returned), or nothing
        changes and the first take that would pass its limit is returned."""
        ...

    def add_counters(self, takes: Sequence[Take]) -> None:
        """Add without a limit (negative amounts give a take back; never below 0)."""
        ...

    def counter_values(self, keys: Sequence[str]) -> dict[str, int]:
        """The current value of each key (0 for a key never counted)."""
        ...

    def forget_counters(self, keys: Sequence[str]) -> None:
        """Delete counters (a rate window that has passed)."""
        ...

    def lease(self, key: str, token: str, now_ms: int, until_ms: int) -> bool:
        """Hold ``key`` for ``token`` until ``until_ms`` (epoch ms); ``False`` if another
        token holds it past ``now_ms``. A holder that dies frees it when the lease ends."""
        ...

    def release(self, key: str, token: str) -> None:
        """End ``token``'s lease on ``key`` (a no-op if it no longer holds it)."""
        ...

    def count_tenant_records(self, tenant: str) -> int:
        """How many records the tenant holds, every user's, deleted and superseded ones
        included (the per-tenant ``max_records`` quota counts them under a lease)."""
        ...


def parse_count(value: object) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


# --- pure logic on current values ------------------------------------------------------------
def plan_takes(
    used: dict[str, int], takes: Sequence[Take]
) -> tuple[dict[str, int], Refusal | None]:
    after = dict(used)
    for i, t in enumerate(takes):
        value = after.get(t.key, 0)
        if t.limit is not None and value + t.amount > t.limit:
            return used, Refusal(i, used.get(t.key, 0))
        after[t.key] = max(0, value + t.amount)
    return after, None


def lease_free(value: str | None, token: str, now_ms: int) -> bool:
    if value is None:
        return True
    until, _, holder = value.partition(" ")
    return holder == token or parse_count(until) <= now_ms


# --- memory:// (a dict under the caller's lock) ---------------------------------------------
def take_in(meta: MutableMapping[str, str], takes: Sequence[Take]) -> Refusal | None:
    keys = {t.key for t in takes}
    after, refused = plan_takes({k: parse_count(meta.get(k, 0)) for k in keys}, takes)
    if refused is None:
        meta.update({k: str(v) for k, v in after.items()})
    return refused


def lease_in(
    meta: MutableMapping[str, str], key: str, token: str, now_ms: int, until_ms: int
) -> bool:
    if not lease_free(meta.get(key), token, now_ms):
        return False
    meta[key] = f"{until_ms} {token}"
    return True


def release_in(meta: MutableMapping[str, str], key: str, token: str) -> None:
    if meta.get(key, "").partition(" ")[2] == token:
        del meta[key]
