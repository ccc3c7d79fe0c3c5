"""Request limits: rate limits per key and per tenant (429) and a request body cap (413).

The server's rate limits are shared by every process that serves the same store
(:func:`shared_limiter`, DESIGN §10): a token bucket per key in Redis when one is configured,
else fixed windows in the durable store's counters, so ``--workers N`` (or N hosts) allow the
rate once between them, not once each. :class:`RateLimiter` is the bucket of one process
(what the shared limiter falls back to without Redis or a store that keeps counters).
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

import anyio.from_thread
import anyio.to_thread
from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..ratelimit import RateCounters, RunSync, SharedRateLimiter, check_rate
from ..ratelimit_state import MAX_KEYS, TokenBuckets
from ..store.quota_counters import QuotaCounters, Refusal, Take
from .errors import ApiError, error_response

if TYPE_CHECKING:
    from ..aio import AsyncMemory

__all__ = [
    "BodyLimit",
    "Limiter",
    "MemoryCounters",
    "RateLimiter",
    "admit",
    "shared_limiter",
]


class Limiter(Protocol):
    """What the server asks of a rate limiter (:class:`RateLimiter`,
    :class:`~memstrata.ratelimit.SharedRateLimiter`)."""

    @property
    def rate(self) -> float: ...
    @property
    def enabled(self) -> bool: ...
    def acquire(self, key: str) -> float:
        """0 when the request may go, else the seconds until it could (may block)."""
        ...

    def acquire_held(self, key: str) -> float | None:
        """:meth:`acquire` without I/O, or None (nothing spent) when it needs
        :meth:`acquire_async`."""
        ...

    async def acquire_async(self, key: str, run_sync: RunSync) -> float:
        """:meth:`acquire` on the event loop; ``run_sync`` runs what blocks on a thread."""
        ...

    def retry_after(self, wait: float) -> str: ...


def shared_limiter(
    rate: float,
    burst: int,
    *,
    store: Any = None,
    counters: RateCounters | None = None,
    redis: Any = None,
    prefix: str = "memstrata",
    batch: int = 1,
    max_keys: int = MAX_KEYS,
) -> Limiter:
    """The limit every process on ``store`` shares: in Redis (a connected ``redis`` client),
    else in the store's durable counters, else (a store without counters) in this process.

    ``store`` may be a Redis front (its ``durable`` store is used, so a Redis outage falls
    back to the durable counters); ``counters`` are given instead of a sync store's (an
    ``AsyncMemory``'s: :class:`MemoryCounters`); ``batch`` is how many requests a process
    takes from the durable counters per write (see
    :class:`~memstrata.ratelimit.SharedRateLimiter`); ``max_keys`` how many keys a process
    keeps limit state for at most (:mod:`memstrata.ratelimit_state`)."""
    durable = getattr(store, "durable", store)
    fallback = counters
    if fallback is None and isinstance(durable, QuotaCounters):
        fallback = durable
    if rate <= 0 or (redis is None and fallback is None):
        return RateLimiter(rate, burst, max_keys=max_keys)
    return SharedRateLimiter(
        rate,
        max(1, burst),
        client=redis,
        fallback=fallback,
        prefix=prefix,
        batch=batch,
        max_keys=max_keys,
    )


class MemoryCounters:
    """The durable counters of an ``AsyncMemory``'s store, for the shared rate limiter.

    On the event loop (:func:`admit`) a refill awaits the memory's async store
    (``atake_counters``: PostgreSQL on its connection pool, SQLite on the store's own
    threads). On an anyio worker thread (the MCP endpoint's key check, a refill while Redis
    is down) a store on threads (SQLite, ``memory://``) is called directly on that thread,
    its sync store's counters as with a sync ``Memory``, and a natively async store
    (PostgreSQL) is awaited on the server's event loop (``anyio.from_thread``). The store is
    looked up at each call: the memory is opened by the server's lifespan, after the limiter
    is built."""

    def __init__(self, memory: AsyncMemory) -> None:
        self._memory = memory

    def _store(self) -> Any:
        store: Any = self._memory.store
        return getattr(store, "durable", store)  # behind a Redis front

    def _durable(self) -> Any:
        from ..aio.threaded import ThreadedStore

        store = self._store()
        return store.sync if isinstance(store, ThreadedStore) else store

    async def atake_counters(self, takes: Sequence[Take]) -> Refusal | None:
        refused: Refusal | None = await self._store().take_counters(takes)
        return refused

    async def aforget_counters(self, keys: Sequence[str]) -> None:
        await self._store().forget_counters(keys)

    def take_counters(self, takes: Sequence[Take]) -> Refusal | None:
        take = self._durable().take_counters
        if not inspect.iscoroutinefunction(take):
            refused: Refusal | None = take(takes)
            return refused
        return cast("Refusal | None", anyio.from_thread.run(take, takes))

    def forget_counters(self, keys: Sequence[str]) -> None:
        forget = self._durable().forget_counters
        if inspect.iscoroutinefunction(forget):
            anyio.from_thread.run(forget, keys)
        else:
            forget(keys)


class RateLimiter:
    """Token bucket per key: ``rate`` requests/s on average, bursts up to ``burst``.

    ``acquire`` returns 0 when the request may go, else the seconds until it could. The
    buckets kept are bounded (:class:`~memstrata.ratelimit_state.TokenBuckets`): a bucket
    full again is dropped (nothing lost), and past ``max_keys`` the least recently used."""

    def __init__(
        self,
        rate: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = MAX_KEYS,
    ) -> None:
        self.rate = check_rate(rate)
        self.burst = max(1, burst)
        self._clock = clock
        self._buckets = TokenBuckets(self.rate, self.burst, max_keys)

    @property
    def enabled(self) -> bool:
        return self.rate > 0

    def acquire(self, key: str) -> float:
        if not self.enabled:
            return 0.0
        return self._buckets.take(key, self._clock())

    def keys_held(self) -> int:
        """How many keys' buckets this process keeps (at most ``max_keys``)."""
        return len(self._buckets)

    def acquire_held(self, key: str) -> float | None:
        return self.acquire(key)  # no I/O

    async def acquire_async(self, key: str, run_sync: RunSync) -> float:
        return self.acquire(key)

    @staticmethod
    def retry_after(wait: float) -> str:
        return str(max(1, math.ceil(wait)))


def _key_refusal(limiter: Limiter, wait: float) -> ApiError:
    return ApiError(
        429,
        "rate_limited",
        f"rate limit of {limiter.rate:g} requests/s for this key exceeded; "
        "retry after the Retry-After seconds",
        {"Retry-After": limiter.retry_after(wait)},
    )


def _tenant_refusal(limiter: Limiter, wait: float, tenant: str) -> ApiError:
    return ApiError(
        429,
        "rate_limited",
        f"rate limit of {limiter.rate:g} requests/s for tenant {tenant!r} (all its "
        "keys together) exceeded; retry after the Retry-After seconds",
        {"Retry-After": limiter.retry_after(wait)},
    )


async def admit(
    key_limiter: Limiter, tenant_limiter: Limiter | None, key_id: str, tenant: str
) -> ApiError | None:
    """The 429 for a request of key ``key_id`` of ``tenant``, or None when it may go.

    The key's own limit is checked first, so a key over its limit does not use up the
    tenant's requests (other keys of the tenant keep their share). Runs on the event loop: a
    token this process holds is spent there (most requests: a refill takes a tenth of the
    burst), a refill from the store is awaited there, and only Redis (or a sync store's
    counters) is called on a worker thread."""
    limit = f"key:{key_id}"
    wait = key_limiter.acquire_held(limit)
    if wait is None:
        wait = await key_limiter.acquire_async(limit, anyio.to_thread.run_sync)
    if wait:
        return _key_refusal(key_limiter, wait)
    if tenant_limiter is None:
        return None
    limit = f"tenant:{tenant}"
    wait = tenant_limiter.acquire_held(limit)
    if wait is None:
        wait = await tenant_limiter.acquire_async(limit, anyio.to_thread.run_sync)
    return _tenant_refusal(tenant_limiter, wait, tenant) if wait else None


class _TooLarge(HTTPException):
    """Raised from ``receive``; FastAPI re-raises HTTPExceptions from body reading as they
    are, so the app's handler answers 413 (and this middleware does, outside FastAPI)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, _too_large(limit), headers={"Connection": "close"})


def _too_large(limit: int) -> str:
    return (
        f"the request body is larger than {limit} bytes; send less per request "
        "(batches of messages, or split the import)"
    )


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes (``large_limit`` on ``large_paths``) with
    413, by ``Content-Length`` before reading and by counting a chunked body as it arrives."""

    def __init__(
        self, app: ASGIApp, *, limit: int, large_limit: int, large_suffixes: tuple[str, ...] = ()
    ) -> None:
        self.app = app
        self.limit = limit
        self.large_limit = large_limit
        self.large_suffixes = large_suffixes

    def _limit_for(self, path: str) -> int:
        return self.large_limit if path.endswith(self.large_suffixes) else self.limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self._limit_for(scope.get("path", ""))
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
                if declared < 0 or declared > limit:
                    await self._refuse(scope, receive, send, limit)
                    return
        seen = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise _TooLarge(limit)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._refuse(scope, receive, send, limit)

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        # and the connection closes: else uvicorn reads (and drops) the rest of a body the
        # client declared at any size, to reach a next request on it
        response = error_response(
            413, "too_large", _too_large(limit), headers={"Connection": "close"}
        )
        await response(scope, receive, send)
