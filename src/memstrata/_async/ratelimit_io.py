"""The I/O of the shared rate limiter (:mod:`memstrata.ratelimit`), written once.

A call of Redis's token bucket script (:func:`ask_bucket`) and a refill from the durable
store's counters (:func:`refill`), async; ``memstrata/ratelimit_io.py`` is generated from
this module. :class:`~memstrata.ratelimit.SharedRateLimiter` calls the sync ones from
``acquire`` (on a worker thread) and awaits these from ``acquire_async`` (on the event loop);
what each step decides is :mod:`memstrata.ratelimit_state`'s, which has no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from memstrata.ratelimit_state import HeldWindows, RedisHealth
from memstrata.store.counter_types import Refusal, Take

__all__ = ["AsyncRateCounters", "ask_bucket", "refill"]


@runtime_checkable
class AsyncRateCounters(Protocol):
    """What the durable fallback needs of a store's counters. A sync store's
    :class:`~memstrata.store.quota_counters.QuotaCounters` are :class:`RateCounters`; the
    coroutines' names start with an ``a`` so that one object can have both kinds, as
    :class:`memstrata.server.limits.MemoryCounters` has."""

    async def atake_counters(self, takes: Sequence[Take]) -> Refusal | None: ...
    async def aforget_counters(self, keys: Sequence[str]) -> None: ...


async def ask_bucket(
    script: Any, health: RedisHealth, key: str, rate: float, burst: int
) -> float | None:
    """The wait Redis's bucket ``key`` answers (0: a token was taken), or None when Redis
    failed (``health`` then falls back until its cooldown ends)."""
    try:
        raw = await script(keys=[key], args=[rate, burst])
    except health.errors as exc:
        health.failed(exc)
        return None
    health.answered()
    return float(raw)


async def refill(windows: HeldWindows, counters: AsyncRateCounters, name: str, now: float) -> float:
    """Take a refill of ``name``'s window at ``now`` from ``counters`` and keep it: 0 (one
    of the tokens is this request's), or the wait until the window ends. The caller holds
    the key's one refill."""
    index, passed = windows.open(name, now)
    if passed:
        await counters.aforget_counters(passed)
    takes = windows.takes(name, index)
    try:
        take = next(takes)
        while True:
            take = takes.send(await counters.atake_counters([take]))
    except StopIteration as done:
        return windows.refilled(name, index, done.value, now)
