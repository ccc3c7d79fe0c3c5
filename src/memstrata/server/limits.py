"""Request limits: a per-key token bucket (429) and a request body cap (413).

The rate limiter is per process: with ``--workers N`` each process allows the rate on its
own (a shared Redis counter is the scale-out plan, DESIGN §10).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import error_response

__all__ = ["BodyLimit", "RateLimiter"]


@dataclass(slots=True)
class _Bucket:
    tokens: float
    stamp: float


class RateLimiter:
    """Token bucket per key: ``rate`` requests/s on average, bursts up to ``burst``.

    ``acquire`` returns 0 when the request may go, else the seconds until it could."""

    def __init__(
        self, rate: float, burst: int, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = max(1, burst)
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.rate > 0

    def acquire(self, key: str) -> float:
        if not self.enabled:
            return 0.0
        now = self._clock()
        with self._lock:
            b = self._buckets.get(key)
            if b is None:
                b = self._buckets[key] = _Bucket(float(self.burst), now)
            b.tokens = min(float(self.burst), b.tokens + (now - b.stamp) * self.rate)
            b.stamp = now
            if b.tokens >= 1.0:
                b.tokens -= 1.0
                return 0.0
            return (1.0 - b.tokens) / self.rate

    @staticmethod
    def retry_after(wait: float) -> str:
        return str(max(1, math.ceil(wait)))


class _TooLarge(HTTPException):
    """Raised from ``receive``; FastAPI re-raises HTTPExceptions from body reading as they
    are, so the app's handler answers 413 (and this middleware does, outside FastAPI)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, _too_large(limit))


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
        response = error_response(413, "too_large", _too_large(limit))
        await response(scope, receive, send)
