"""A request rate limit that several server processes share (DESIGN §10).

:class:`SharedRateLimiter` is a token bucket per key (an API key, a tenant): ``rate``
requests per second on average, bursts up to ``burst``. Its state lives in Redis, updated by
one Lua script on Redis's own clock, so any number of processes (``memstrata serve
--workers N``, several hosts) draw from one bucket per key.

When Redis is down (or none is configured) it falls back, with one ``WARNING`` per outage:

- to the durable store's counters (:class:`~memstrata.store.quota_counters.QuotaCounters`)
  when one is given: fixed windows of ``burst / rate`` seconds admitting ``burst`` requests
  each, shared by every process on that store (the same average rate; up to twice the burst
  across a window boundary). With ``batch`` > 1 a process takes that many of a window's
  requests from the store at once and admits them from memory until they are spent (one
  store write per ``batch`` requests instead of one each): never more than ``burst`` per
  window between all processes, but a process may be refused while another still holds
  up to ``batch - 1`` unspent ones. One refill per key is under way at a time in a process
  (the callers that find no token wait for it and then spend what it took: concurrent
  refills would each take a batch and leave the window spent while the tokens sit unused),
  and once the store refuses a window's last request the process refuses the rest of that
  window itself (its counter only grows until the window ends). A window's counter is
  deleted once the process is two windows past it (a process whose clock reads a little
  behind may still take from it);
- otherwise to a bucket in this process alone (each process then allows the rate).

Redis is tried again after ``cooldown`` seconds. It has the same ``acquire`` /
``retry_after`` interface as :class:`memstrata.server.limits.RateLimiter`, and two for an
event loop: :meth:`SharedRateLimiter.acquire_held` answers from what this process holds
(held tokens, a window it knows is spent, the process's own bucket) without any I/O, or
says it cannot; :meth:`SharedRateLimiter.acquire_async` asks Redis through an async client
(:meth:`SharedRateLimiter.use_async_redis`) and refills from the store's async counters
(:class:`AsyncRateCounters`) on the loop, and runs what can only block (Redis without an
async client, a sync store) through the caller's ``run_sync`` (a worker thread). Keys are
hashed before they reach Redis or the store.

One source for both paths: what a step decides (the windows held, Redis's health) is
:mod:`memstrata.ratelimit_state`, without I/O; the I/O of a step (the bucket script, a
refill) is written once, async, in ``memstrata/_async/ratelimit_io.py``, whose sync twin
``memstrata/ratelimit_io.py`` is generated. This module keeps what differs by nature: one
refill per key between worker threads (a lock) and the event loop (an event).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import math
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from . import ratelimit_io
from ._async import ratelimit_io as async_io
from ._async.ratelimit_io import AsyncRateCounters
from .errors import ValidationError
from .ratelimit_io import RateCounters
from .ratelimit_state import MAX_KEYS, HeldWindows, RedisHealth, TokenBuckets

__all__ = ["AsyncRateCounters", "RateCounters", "SharedRateLimiter", "check_rate"]

# KEYS[1]: the bucket (a hash). ARGV: rate (tokens/s), burst. Returns the wait in seconds
# (a string: Redis truncates Lua numbers to integers), "0" when a token was taken.
_BUCKET = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local b = redis.call('HMGET', KEYS[1], 'tokens', 'stamp')
local tokens = tonumber(b[1]) or burst
local stamp = tonumber(b[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - stamp) * rate)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) / rate end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'stamp', tostring(now))
redis.call('EXPIRE', KEYS[1], math.ceil(burst / rate) + 1)
return tostring(wait)
"""

# run_sync(fn) runs a blocking call off the event loop (anyio.to_thread.run_sync)
RunSync = Callable[[Callable[[], float]], Awaitable[float]]


def _hash(key: str) -> str:
    return hashlib.blake2b(key.encode(), digest_size=10, person=b"mstr-rate").hexdigest()


def check_rate(rate: object, name: str = "rate") -> float:
    """A rate limit in requests per second: finite and >= 0 (0: no limit). NaN or a
    negative rate had turned the limit off without a word, and inf made every request a 500
    (a division by the zero-length window)."""
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate < math.inf:
        raise ValidationError(
            f"{name} must be requests per second, a finite number >= 0 (0: no limit), got {rate!r}"
        )
    return float(rate)


class SharedRateLimiter:
    """Token bucket per key shared through Redis; see the module docstring.

    ``client`` is a connected redis-py client (:func:`memstrata.store.redis_hot.open_redis`)
    or ``None``; ``fallback`` the durable counters used while Redis is down (refilled on the
    event loop by :meth:`acquire_async` when they are also :class:`AsyncRateCounters`)."""

    def __init__(
        self,
        rate: float,
        burst: int,
        *,
        client: Any = None,
        fallback: RateCounters | None = None,
        prefix: str = "memstrata",
        cooldown: float = 2.0,
        clock: Callable[[], float] = time.time,
        batch: int = 1,
        max_keys: int = MAX_KEYS,
    ) -> None:
        check_rate(rate)
        if isinstance(burst, bool) or not isinstance(burst, int) or burst < 1:
            raise ValidationError(f"burst must be an integer >= 1, got {burst!r}")
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ValidationError(f"batch must be an integer >= 1, got {batch!r}")
        self.rate = float(rate)
        self.burst = burst
        self._fallback = fallback
        self._native = fallback if isinstance(fallback, AsyncRateCounters) else None
        self._prefix = prefix
        self._clock = clock
        # The state kept per key is bounded (a server sees millions of keys over months):
        # at most ``max_keys`` keys' windows and buckets (ratelimit_state), a refill's lock
        # only while someone holds or waits for it, its event only while it runs.
        self._held = HeldWindows(self.rate, burst, batch, max_keys)  # the durable windows
        self._lock = threading.Lock()  # guards the dicts below; never held across I/O
        # key -> held by its one refill; an entry lives while a caller holds the lock (a
        # lock dropped had no holder and no waiter: the next caller's new one excludes as
        # well, since every caller of a key gets the one lock that exists while it is used)
        self._refills: weakref.WeakValueDictionary[str, threading.Lock] = (
            weakref.WeakValueDictionary()
        )
        self._refilling: dict[str, asyncio.Event] = {}  # key -> set when the loop's refill ends
        self._local = TokenBuckets(self.rate, burst, max_keys)  # without anything to share
        self._script = client.register_script(_BUCKET) if client is not None else None
        self._async_script: Any = None  # the same script on a redis.asyncio client
        errors: tuple[type[BaseException], ...] = ()
        if client is not None:
            import redis

            errors = (redis.RedisError,)
        where = "the durable store's counters" if fallback else "this process alone"
        self._redis = RedisHealth(errors, cooldown, where)

    @property
    def enabled(self) -> bool:
        return self.rate > 0

    @property
    def window_seconds(self) -> float:
        """The fixed window of the durable fallback: ``burst / rate`` seconds."""
        return self._held.window_seconds

    def acquire(self, key: str) -> float:
        """0 when the request may go now, else the seconds until it could (may wait on
        Redis or the store: call it off the event loop)."""
        if not self.enabled:
            return 0.0
        return self._acquire(_hash(key))

    def acquire_held(self, key: str) -> float | None:
        """:meth:`acquire` without I/O, or None when only Redis or the store can answer.

        0 when a token this process holds was spent; the wait when this process knows the
        key's window is spent; the answer of the process's own bucket when there is nothing
        to share through. After None nothing was spent: call :meth:`acquire` (on a thread)
        or :meth:`acquire_async`."""
        if not self.enabled:
            return 0.0
        if self._redis_active():
            return None
        name = _hash(key)
        if self._fallback is None:
            return self._local_acquire(name)
        return self._held.spend(name, self._clock())

    async def acquire_async(self, key: str, run_sync: RunSync) -> float:
        """:meth:`acquire` on an event loop: Redis through the async client of
        :meth:`use_async_redis`, the held tokens, a refill from :class:`AsyncRateCounters`
        awaited on the loop (one per key at a time: the others wait for it), and what can
        only block (Redis without an async client, sync counters) through ``run_sync(fn)``,
        which must run ``fn`` on a worker thread."""
        if not self.enabled:
            return 0.0
        name = _hash(key)
        if self._redis_active():
            script = self._async_script
            if script is None:
                return await run_sync(lambda: self._acquire(name))
            wait = await async_io.ask_bucket(
                script, self._redis, self._bucket(name), self.rate, self.burst
            )
            if wait is not None:
                return wait
        fallback, native = self._fallback, self._native
        if fallback is not None and native is None:
            return await run_sync(lambda: self._acquire(name))
        if fallback is None or native is None:
            return self._local_acquire(name)
        return await self._durable_acquire_async(fallback, native, name, run_sync)

    def use_async_redis(self, client: Any) -> None:
        """Ask Redis through ``client`` (a ``redis.asyncio`` client of the same server, used
        on one event loop) in :meth:`acquire_async`, with no worker thread; ``None``: through
        the sync client on a worker thread again (before the async client is closed)."""
        if client is not None and self._script is None:
            raise ValidationError("use_async_redis needs a limiter built with a Redis client")
        self._async_script = client.register_script(_BUCKET) if client is not None else None

    @staticmethod
    def retry_after(wait: float) -> str:
        return str(max(1, math.ceil(wait)))

    def _acquire(self, name: str) -> float:
        wait = self._redis_acquire(name)
        if wait is not None:
            return wait
        if self._fallback is not None:
            return self._durable_acquire(self._fallback, name)
        return self._local_acquire(name)

    # --- Redis -----------------------------------------------------------------------------
    def _redis_active(self) -> bool:
        """Redis is configured and not within its cooldown after a failure."""
        return self._script is not None and self._redis.up_now()

    def _bucket(self, name: str) -> str:
        return f"{self._prefix}:rate:{name}"

    def _redis_acquire(self, name: str) -> float | None:
        script = self._script
        if script is None or not self._redis.up_now():
            return None
        return ratelimit_io.ask_bucket(
            script, self._redis, self._bucket(name), self.rate, self.burst
        )

    # --- the durable fallback: one refill per key, on a thread or on the loop --------------
    def _refill_lock(self, name: str) -> threading.Lock:
        with self._lock:
            return self._refills.setdefault(name, threading.Lock())

    def _durable_acquire(self, counters: RateCounters, name: str) -> float:
        wait = self._held.spend(name, self._clock())
        if wait is not None:
            return wait
        with self._refill_lock(name):
            now = self._clock()
            wait = self._held.spend(name, now)  # another caller's refill while we waited
            if wait is not None:
                return wait
            return ratelimit_io.refill(self._held, counters, name, now)

    async def _durable_acquire_async(
        self, sync: RateCounters, counters: AsyncRateCounters, name: str, run_sync: RunSync
    ) -> float:
        """:meth:`_durable_acquire` with the refill awaited on the loop; a refill under way
        on a worker thread (:meth:`acquire`'s) is waited for on a thread too."""
        while True:
            now = self._clock()
            wait = self._held.spend(name, now)
            if wait is not None:
                return wait
            lock = self._refill_lock(name)
            if lock.acquire(blocking=False):
                wait = self._held.spend(name, now)  # a thread's refill ended just now
                if wait is None:
                    break
                lock.release()
                return wait
            refilling = self._refilling.get(name)
            if refilling is None:  # a worker thread refills (acquire): wait for it there
                return await run_sync(functools.partial(self._durable_acquire, sync, name))
            await refilling.wait()
        done = self._refilling[name] = asyncio.Event()
        try:
            return await async_io.refill(self._held, counters, name, now)
        finally:
            del self._refilling[name]
            lock.release()
            done.set()

    # --- this process alone -----------------------------------------------------------------
    def _local_acquire(self, name: str) -> float:
        return self._local.take(name, time.monotonic())

    def keys_held(self) -> int:
        """How many keys this process keeps state for (its windows, buckets and refill
        locks: the largest of them), each at most ``max_keys``."""
        with self._lock:
            refills = len(self._refills)
        return max(len(self._held), len(self._local), refills, len(self._refilling))
