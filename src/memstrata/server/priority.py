"""Reads first when the server is saturated: a gate in front of the user routes.

An agent asks for a search or a context before it answers its user and stores the turn
afterwards, so under more load than the cores can serve, a request that reads waits for the
ones that write. The gate lets ``slots`` user-route requests run at once; the others wait in
order of their class — search, then the other reads (context, GET), then writes — and of
arrival. A waiting write is promoted to the first class after ``promote_after`` seconds, so a
steady stream of reads never starves it. A request holds its slot at most ``max_hold``
seconds: a long one (a maintenance pass, a large document) then runs on without it, so it
never stops the others for longer than that. Below saturation nobody waits and the order is
arrival order, as without the gate. Export and import (long streams) and everything outside
``/v1/users/`` pass untouched.

It orders, it does not refuse: rate limits and quotas stay the routes' (429).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["PriorityGate", "ReadsFirst", "request_class"]

SEARCH, READ, WRITE = 0, 1, 2
_STREAMS = ("/export", "/import")


def request_class(method: str, path: str) -> int | None:
    """The gate's class of a request, or ``None`` when it passes untouched."""
    if not path.startswith("/v1/users/") or path.endswith(_STREAMS):
        return None
    if path.endswith("/search"):
        return SEARCH
    if method in ("GET", "HEAD") or path.endswith("/context"):
        return READ
    return WRITE


@dataclass(order=True)
class _Waiter:
    rank: int
    seq: int
    since: float = field(compare=False)
    future: asyncio.Future[None] = field(compare=False)


class PriorityGate:
    """At most ``slots`` holders at once; a freed slot goes to the best waiter (lowest class,
    then earliest), a waiter older than ``promote_after`` seconds counting as class 0."""

    def __init__(self, slots: int, promote_after: float = 1.0) -> None:
        self._slots = slots
        self._promote_after = promote_after
        self._busy = 0
        self._waiting: list[_Waiter] = []
        self._seq = itertools.count()

    async def acquire(self, rank: int) -> None:
        if self._busy < self._slots and not self._waiting:
            self._busy += 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiter = _Waiter(rank, next(self._seq), time.monotonic(), future)
        self._waiting.append(waiter)
        try:
            await waiter.future
        except BaseException:
            if waiter in self._waiting:
                self._waiting.remove(waiter)
            elif waiter.future.done() and not waiter.future.cancelled():
                self.release()  # granted as it was cancelled: pass the slot on
            raise

    def release(self) -> None:
        self._busy -= 1
        while self._waiting and self._busy < self._slots:
            now = time.monotonic()
            best = min(
                self._waiting,
                key=lambda w: (0 if now - w.since >= self._promote_after else w.rank, w.seq),
            )
            self._waiting.remove(best)
            if best.future.done():  # cancelled meanwhile
                continue
            self._busy += 1
            best.future.set_result(None)


class ReadsFirst:
    """ASGI middleware: each user-route request holds a slot of the gate while it runs, for
    at most ``max_hold`` seconds."""

    def __init__(
        self, app: ASGIApp, slots: int, promote_after: float = 1.0, max_hold: float = 0.25
    ) -> None:
        self.app = app
        self.gate = PriorityGate(slots, promote_after)
        self.max_hold = max_hold

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        rank = (
            request_class(scope.get("method", ""), scope.get("path", ""))
            if scope["type"] == "http"
            else None
        )
        if rank is None:
            await self.app(scope, receive, send)
            return
        await self.gate.acquire(rank)
        held = True

        def let_go() -> None:
            nonlocal held
            if held:
                held = False
                self.gate.release()

        timer = asyncio.get_running_loop().call_later(self.max_hold, let_go)
        try:
            await self.app(scope, receive, send)
        finally:
            timer.cancel()
            let_go()
