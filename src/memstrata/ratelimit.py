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
  up to ``batch - 1`` unspent ones;
- otherwise to a bucket in this process alone (each process then allows the rate).

Redis is tried again after ``cooldown`` seconds. It has the same ``acquire`` /
``retry_after`` interface as :class:`memstrata.server.limits.RateLimiter`. Keys are hashed
before they reach Redis or the store.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .errors import ValidationError
from .store.quota_counters import Refusal, Take

__all__ = ["RateCounters", "SharedRateLimiter"]

log = logging.getLogger(__name__)

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


class RateCounters(Protocol):
    """What the durable fallback needs of a store's counters
    (:class:`~memstrata.store.quota_counters.QuotaCounters` has it)."""

    def take_counters(self, takes: Sequence[Take]) -> Refusal | None: ...
    def forget_counters(self, keys: Sequence[str]) -> None: ...


def _hash(key: str) -> str:
    return hashlib.blake2b(key.encode(), digest_size=10, person=b"mstr-rate").hexdigest()


class SharedRateLimiter:
    """Token bucket per key shared through Redis; see the module docstring.

    ``client`` is a connected redis-py client (:func:`memstrata.store.redis_hot.open_redis`)
    or ``None``; ``fallback`` the durable counters used while Redis is down."""

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
    ) -> None:
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not rate >= 0:
            raise ValidationError(f"rate must be requests per second >= 0, got {rate!r}")
        if isinstance(burst, bool) or not isinstance(burst, int) or burst < 1:
            raise ValidationError(f"burst must be an integer >= 1, got {burst!r}")
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ValidationError(f"batch must be an integer >= 1, got {batch!r}")
        self.rate = float(rate)
        self.burst = burst
        self._client = client
        self._fallback = fallback
        self._prefix = prefix
        self._cooldown = cooldown
        self._clock = clock
        self._down_since: float | None = None
        self._lock = threading.Lock()
        self._batch = min(batch, burst)
        self._windows: dict[str, int] = {}  # key -> the durable window last used
        self._held: dict[str, tuple[int, int]] = {}  # key -> (window, taken but unspent)
        self._local: dict[str, tuple[float, float]] = {}  # key -> (tokens, stamp)
        self._script = client.register_script(_BUCKET) if client is not None else None
        self._errors: tuple[type[BaseException], ...] = ()
        if client is not None:
            import redis

            self._errors = (redis.RedisError,)

    @property
    def enabled(self) -> bool:
        return self.rate > 0

    @property
    def window_seconds(self) -> float:
        """The fixed window of the durable fallback: ``burst / rate`` seconds."""
        return self.burst / self.rate if self.rate > 0 else 1.0

    def acquire(self, key: str) -> float:
        """0 when the request may go now, else the seconds until it could."""
        if not self.enabled:
            return 0.0
        name = _hash(key)
        wait = self._redis_acquire(name)
        if wait is not None:
            return wait
        if self._fallback is not None:
            return self._durable_acquire(self._fallback, name)
        return self._local_acquire(name)

    @staticmethod
    def retry_after(wait: float) -> str:
        return str(max(1, math.ceil(wait)))

    # --- Redis -----------------------------------------------------------------------------
    def _redis_acquire(self, name: str) -> float | None:
        if self._script is None:
            return None
        down = self._down_since
        if down is not None and time.monotonic() - down < self._cooldown:
            return None
        try:
            raw = self._script(keys=[f"{self._prefix}:rate:{name}"], args=[self.rate, self.burst])
        except self._errors as exc:
            self._mark_down(exc)
            return None
        if self._down_since is not None:
            with self._lock:
                self._down_since = None
            log.info("Redis is back; the shared rate limit is kept there again")
        return float(raw)

    def _mark_down(self, exc: BaseException) -> None:
        with self._lock:
            first = self._down_since is None
            self._down_since = time.monotonic()
        if first:
            where = "the durable store's counters" if self._fallback else "this process alone"
            log.warning(
                "Redis unavailable for the shared rate limit (%s: %s); limiting on %s until "
                "it is back (retrying every %.1f s)",
                type(exc).__name__,
                exc,
                where,
                self._cooldown,
            )

    # --- fallbacks -------------------------------------------------------------------------
    def _durable_acquire(self, counters: RateCounters, name: str) -> float:
        window = self.window_seconds
        now = self._clock()
        index = int(now // window)
        key = f"rate:{name}:{index}"
        with self._lock:
            previous = self._windows.get(name)
            self._windows[name] = index
            held = self._held.get(name)
            if held is not None and held[0] == index and held[1] > 0:
                self._held[name] = (index, held[1] - 1)
                return 0.0
        if previous is not None and previous != index:
            counters.forget_counters([f"rate:{name}:{previous}"])
        ttl = math.ceil(window)
        for amount in dict.fromkeys((self._batch, 1)):  # a whole batch, else the last ones
            if counters.take_counters([Take(key, amount, self.burst, ttl)]) is None:
                with self._lock:
                    held = self._held.get(name)
                    spare = held[1] if held is not None and held[0] == index else 0
                    self._held[name] = (index, spare + amount - 1)
                return 0.0
        return max(0.001, (index + 1) * window - now)

    def _local_acquire(self, name: str) -> float:
        now = time.monotonic()
        with self._lock:
            tokens, stamp = self._local.get(name, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - stamp) * self.rate)
            if tokens >= 1.0:
                self._local[name] = (tokens - 1.0, now)
                return 0.0
            self._local[name] = (tokens, now)
            return (1.0 - tokens) / self.rate
