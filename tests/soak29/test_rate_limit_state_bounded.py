"""A server's rate-limit state per API key and per tenant is bounded (session 29).

A server that sees millions of keys over months kept, before, an entry per key it had ever
seen in each of: the process-local buckets (``server.limits.RateLimiter``, and
``SharedRateLimiter``'s own when it has nothing to share through), the durable fallback's
held windows (``ratelimit_state.HeldWindows``) and one refill lock per key
(``SharedRateLimiter._refills``). Each test sends many distinct keys and asserts the size
after; the others assert that what is dropped never lets a key past its limit.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import anyio.to_thread
import pytest

from memstrata import ratelimit_state
from memstrata.ratelimit import SharedRateLimiter
from memstrata.server.limits import RateLimiter
from memstrata.store import open_store
from memstrata.store.quota_counters import QuotaCounters

KEYS = 5_000


class Clock:
    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store() -> Iterator[QuotaCounters]:
    s = open_store("memory://")
    try:
        yield s  # type: ignore[misc]
    finally:
        s.close()


# --- the process-local buckets ------------------------------------------------------------
def test_full_buckets_are_dropped_so_keys_gone_quiet_cost_nothing() -> None:
    """Each key sends one request, the next arrives once the bucket refilled: every bucket
    but the last is full again and dropped (nothing lost: a new bucket starts full)."""
    clock = Clock()
    limiter = RateLimiter(10.0, 5, clock=clock)
    for i in range(KEYS):
        assert limiter.acquire(f"key:{i}") == 0.0
        clock.now += 1.0  # 10 tokens' worth: every bucket so far is full again
    assert len(limiter._buckets) <= 2


def test_the_buckets_stay_under_max_keys_when_none_is_full() -> None:
    clock = Clock()  # frozen: no bucket refills, none may be dropped for being full
    limiter = RateLimiter(1.0, 5, clock=clock, max_keys=100)
    for i in range(KEYS):
        limiter.acquire(f"key:{i}")
    assert len(limiter._buckets) <= 100
    assert limiter.keys_held() <= 100


def test_a_drained_key_stays_limited_while_other_keys_come_and_go() -> None:
    """Dropping full buckets must not reset a key that is over its limit: other keys'
    buckets (under ``max_keys``) come and go around it."""
    clock = Clock()
    limiter = RateLimiter(1.0, 3, clock=clock)
    for _ in range(3):
        assert limiter.acquire("key:attacker") == 0.0
    assert limiter.acquire("key:attacker") > 0
    for i in range(500):  # each used once, then full again a few seconds later
        limiter.acquire(f"key:other-{i}")
        clock.now += 0.001
    assert limiter.acquire("key:attacker") > 0  # 0.5 s later: still no whole token
    clock.now += 2.0
    assert limiter.acquire("key:attacker") == 0.0  # refilled at the rate, not reset


def test_token_buckets_refuse_a_max_keys_below_one() -> None:
    with pytest.raises(ValueError, match="max_keys"):
        ratelimit_state.TokenBuckets(1.0, 1, max_keys=0)


def test_the_shared_limiters_own_buckets_are_bounded_too() -> None:
    """``SharedRateLimiter`` without Redis or counters keeps buckets in the process."""
    limiter = SharedRateLimiter(1e-3, 5, max_keys=100)  # a token every 1,000 s: none full
    for i in range(KEYS):
        limiter.acquire(f"key:{i}")
    assert len(limiter._local) <= 100
    assert limiter.keys_held() <= 100


# --- the durable fallback: windows and refill locks ---------------------------------------
def test_refill_locks_live_only_while_a_refill_holds_them(store: QuotaCounters) -> None:
    limiter = SharedRateLimiter(10.0, 10, fallback=store, batch=5)
    for i in range(KEYS // 5):
        assert limiter.acquire(f"key:{i}") == 0.0
    gc.collect()
    assert len(limiter._refills) == 0


def test_refill_locks_on_the_event_loop_are_dropped_too(store: QuotaCounters) -> None:
    from memstrata.server.limits import MemoryCounters  # noqa: F401 - the server's kind

    class Async:
        def __init__(self, s: QuotaCounters) -> None:
            self.s = s

        def take_counters(self, takes):  # type: ignore[no-untyped-def]
            return self.s.take_counters(takes)

        def forget_counters(self, keys):  # type: ignore[no-untyped-def]
            self.s.forget_counters(keys)

        async def atake_counters(self, takes):  # type: ignore[no-untyped-def]
            return self.s.take_counters(takes)

        async def aforget_counters(self, keys):  # type: ignore[no-untyped-def]
            self.s.forget_counters(keys)

    limiter = SharedRateLimiter(10.0, 10, fallback=Async(store), batch=5)

    async def run() -> None:
        for i in range(KEYS // 5):
            assert await limiter.acquire_async(f"key:{i}", anyio.to_thread.run_sync) == 0.0

    asyncio.run(run())
    gc.collect()
    assert len(limiter._refills) == 0
    assert len(limiter._refilling) == 0


def test_windows_two_windows_old_are_dropped_and_their_counters_forgotten(
    store: QuotaCounters,
) -> None:
    """Keys that each come once, over many windows: the process holds the recent ones,
    and the store's counters of the others are forgotten (before: one window held per key
    ever seen, and its counters kept in the store)."""
    clock = Clock(0.0)
    limiter = SharedRateLimiter(10.0, 10, fallback=store, clock=clock, batch=5)  # 1 s windows
    for i in range(KEYS):
        assert limiter.acquire(f"key:{i}") == 0.0
        clock.now += 0.01  # 100 keys a window
    assert len(limiter._held._windows) <= 400  # this window's and the last one's, and a margin
    meta = store._meta  # type: ignore[attr-defined]
    assert sum(1 for k in meta if k.startswith("rate:")) <= 400


def test_the_windows_stay_under_max_keys_within_one_window(store: QuotaCounters) -> None:
    clock = Clock(0.0)  # frozen: every key's window is the current one
    limiter = SharedRateLimiter(1.0, 10, fallback=store, clock=clock, batch=5, max_keys=100)
    for i in range(KEYS // 5):
        limiter.acquire(f"key:{i}")
    assert len(limiter._held) <= 100


def test_a_dropped_window_never_admits_past_the_burst(store: QuotaCounters) -> None:
    """A spent key whose window this process dropped (``max_keys`` other keys came) asks
    the store again, which still refuses: the count lives there."""
    clock = Clock(0.0)
    limiter = SharedRateLimiter(1.0, 10, fallback=store, clock=clock, batch=5, max_keys=10)
    admitted = sum(limiter.acquire("key:attacker") == 0.0 for _ in range(10))
    assert admitted == 10
    assert limiter.acquire("key:attacker") > 0
    for i in range(50):  # the attacker's window is dropped from the process
        limiter.acquire(f"key:other-{i}")
    assert len(limiter._held) <= 10
    assert all(limiter.acquire("key:attacker") > 0 for _ in range(20))


def test_held_windows_refuse_a_max_keys_below_one() -> None:
    with pytest.raises(ValueError, match="max_keys"):
        ratelimit_state.HeldWindows(1.0, 1, 1, max_keys=0)


# --- configuration ----------------------------------------------------------------------
def test_the_servers_limits_take_max_keys(store: QuotaCounters) -> None:
    from memstrata.errors import ValidationError
    from memstrata.server.app import Limits

    key, tenant = Limits(tenant_rate=5.0, max_keys=50).limiters(store=store)
    assert isinstance(key, SharedRateLimiter) and tenant is not None
    for i in range(500):
        key.acquire(f"key:{i}")
        tenant.acquire(f"tenant:{i}")
    assert key.keys_held() <= 50
    assert tenant.keys_held() <= 50  # type: ignore[attr-defined]
    local, _ = Limits(max_keys=50).limiters()
    assert isinstance(local, RateLimiter)
    with pytest.raises(ValidationError, match="max_keys"):
        Limits(max_keys=0)
