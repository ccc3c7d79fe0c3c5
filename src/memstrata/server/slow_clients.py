"""Deadlines for clients that stall: uvicorn's HTTP protocol with header and body timeouts.

uvicorn has none (session 22): a client that opened a connection and sent part of its
headers, or its headers and then part of a body, kept its descriptor and (for the body) a
request task for as long as it liked; a few thousand such connections exhaust a process's
descriptors (a slow-loris). This protocol adds three deadlines, as nginx has them:

- **headers**: a request's headers must be complete within ``header_timeout`` seconds of
  the connection opening (its first request) or of the request's first byte (a later one
  on a kept-alive connection; between requests uvicorn's keep-alive timeout applies). A
  whole deadline, not one between bytes: a client sending a byte a second never ends.
  Then: 408 if part of a request came, and the connection is closed.
- **request body**: ``body_timeout`` seconds between two chunks, not for the whole body,
  so a large upload over a slow link goes on as long as it moves. Time the server itself
  is not reading (the app has not taken what came, uvicorn paused reading; or the client
  waits for ``100 Continue``) does not count. Then: 408 if no answer has started, and the
  connection is closed; the request's task sees the client gone.
- **response**: a client that takes nothing of an answer for ``body_timeout`` seconds
  while the server has more to send (its socket buffer full) is disconnected: a stalled
  export reader otherwise held its connection and its snapshot transaction open.

- **body rate** (session 23): the pause deadline alone let a client send a byte every 59 s
  and hold its connection, its request task and what it had sent for as long as it
  liked. Once a body has been coming for a grace period (``body_timeout``, else 60 s),
  its average since its first byte must be at least ``min_body_rate`` bytes/s (Apache
  mod_reqtimeout's ``MinRate``); time the server held it (reading paused) is not the
  client's. Then: 408 if no answer has started, and the connection is closed.

The request head is bounded too, since httptools keeps what it parses in memory and
the header deadline bounds time, not bytes (an 8 MB header was read whole): a request
target over ``max_url`` bytes is a 414, a head over ``max_head`` bytes or with more than
``max_fields`` header fields a 431, and any other request the parser refuses (a bad
``Content-Length``, both it and chunked, a malformed chunk) a 400; each is JSON, like the
app's errors, and closes the connection. And at most ``max_connections`` connections
are open: one more closes the one idle longest (between two requests, or before its
first byte), as nginx reuses its connections, or, with none idle, is answered 503. With
``max_connections_per_ip`` (session 24; 0, no cap, by default) one client address holds
at most that many: one more closes that address's connection idle longest, or, with none
idle, is answered 429 (nginx's ``limit_conn``). It counts the connection's peer, which
behind a proxy is the proxy: leave it off there, and cap each client in the proxy.

Nothing here upgrades (no WebSocket, no h2c): a request asking to (``Connection:
Upgrade``) is served as the HTTP/1.1 request it also is, as RFC 9110 (7.8) allows, its
body and the requests after it on the connection included. The parser, told an upgrade
was coming, would skip the body and stop at the end of the head; the head is parsed again
without its ``Upgrade`` (session 24: before, the body was dropped, the app answered 422
and the connection waited out its keep-alive timeout).

A connection closed while its request is still arriving (an answer before the body's
end: a 413 by ``Content-Length``, a 503 ``out_of_memory`` while the body came, the parser's
400 for a malformed chunk; not a 408, whose client is cut for stalling) is closed as
nginx's ``lingering_close`` does (session 31): the answer, then end of file on the write
side, and what the client still sends is read and dropped until it closes (at most
``_DRAIN_BYTES``, ``_DRAIN_S`` in all, and ``_LINGER_S`` without a byte). Before, the
socket was closed with the body still coming; the client's next bytes met a reset, so a
client that sends its whole body before it reads failed with "Broken pipe" / "Connection
reset by peer" instead of reading its answer.

The checks cost one timer per connection, re-armed at most once per deadline; a chunk
that arrives only records its time and size.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
import weakref
from collections import Counter
from collections.abc import Callable
from typing import Any

import httptools
from uvicorn.config import Config
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .observe import TIMED_OUT

__all__ = ["TimedConfig", "TimedHttpProtocol", "fit_descriptors"]

log = logging.getLogger("memstrata.server")

# After a 408, the connection is closed once the answer has left; a client that does not
# read it either is cut this much later.
_LINGER_S = 1.0
# A close while the request is still arriving drains it first (the module's docstring):
# at most this much more of it is read (the largest body the server takes, an import's
# 64 MiB, and some), for at most this long.
_DRAIN_BYTES = 80 * 2**20
_DRAIN_S = 30.0
# The body rate's grace period when there is no body deadline to take it from.
_RATE_GRACE_S = 60.0
# The request head: nginx reads a request line or header of up to 8 kB, 32 kB in all by
# default; Apache 8 kB a line and 100 fields; Node 16 kB in all. Generous beside them (a
# search with a hundred 256-character tags is 30 kB of URL), small beside a process's
# memory: 64 kB a connection.
MAX_URL = 32 * 1024
MAX_HEAD = 64 * 1024
MAX_FIELDS = 100


# Descriptors kept for what is not a client: the store's files and pools, logs, the
# listening socket, a worker's pipes.
_RESERVED_FDS = 64


def fit_descriptors(max_connections: int) -> int:
    """The connection cap this process can hold: its soft descriptor limit is raised to fit
    ``max_connections`` and what the process needs besides, as far as the hard limit allows
    (inherited by ``--workers``' processes); a cap that still does not fit is lowered, and
    the log says so. 0 (no cap) stays 0."""
    try:
        import resource
    except ImportError:  # not POSIX: nothing to fit
        return max_connections
    if max_connections <= 0:
        return max_connections
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = max_connections + _RESERVED_FDS
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft != resource.RLIM_INFINITY and soft < needed:
        fitted = max(1, soft - _RESERVED_FDS)
        log.warning(
            "--max-connections %d does not fit the descriptor limit (%d, hard %d): %d "
            "connections at most; raise the limit (ulimit -n) for more",
            max_connections, soft, hard, fitted,
        )  # fmt: skip
        return fitted
    return max_connections


def _not_uvicorns_parser_warning(record: logging.LogRecord) -> bool:
    """False for uvicorn's warning on each request its parser refuses: the protocol below
    logs the client and the reason instead, at info (a client's fault, not the server's;
    a warning a request let anyone fill the log at the level operators watch)."""
    return record.getMessage() != "Invalid HTTP request received."


class TimedConfig(Config):
    """uvicorn's ``Config`` carrying the deadlines in seconds (0: none), the body's minimum
    rate in bytes/s (0: none), the connection caps (0: none) and the request head's limits
    (picklable, for ``--workers``); its protocol is :class:`TimedHttpProtocol` unless
    ``http`` says otherwise. The CLI's options have the defaults (``memstrata serve
    --help``)."""

    def __init__(
        self,
        app: Any,
        *,
        header_timeout: float,
        body_timeout: float,
        min_body_rate: float = 0.0,
        max_connections: int = 0,
        max_connections_per_ip: int = 0,
        max_url: int = MAX_URL,
        max_head: int = MAX_HEAD,
        max_fields: int = MAX_FIELDS,
        **options: Any,
    ) -> None:
        options.setdefault("http", TimedHttpProtocol)
        options.setdefault("ws", "none")  # nothing here speaks WebSocket (see above)
        super().__init__(app, **options)
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.min_body_rate = min_body_rate
        self.max_connections = max_connections
        self.max_connections_per_ip = max_connections_per_ip
        self.max_url = max_url
        self.max_head = max_head
        self.max_fields = max_fields


def _answer(status: int, reason: bytes, code: str, message: str, extra: bytes = b"") -> bytes:
    body = json.dumps({"error": {"code": code, "message": message, "fields": []}}).encode()
    return (
        b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\n" % (status, reason)
        + b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n"
        + extra + b"\r\n" + body
    )  # fmt: skip


def _timeout_answer(message: str) -> bytes:
    return _answer(408, b"Request Timeout", "request_timeout", message)


class _Refused(Exception):
    """Raised in a parser callback (httptools then raises its ``HttpParserCallbackError``,
    which uvicorn answers with :meth:`TimedHttpProtocol.send_400_response`)."""

    def __init__(self, status: int, reason: bytes, code: str, message: str) -> None:
        super().__init__(message)
        self.answer = _answer(status, reason, code, message)


# Open connections per client address, for each server (its ``ServerState``: the protocols
# of one server share it), counted as they open and close: O(1) a connection.
_PER_ADDRESS: weakref.WeakKeyDictionary[Any, Counter[str]] = weakref.WeakKeyDictionary()


class _TimedFlow(FlowControl):
    """uvicorn's flow control, counting the time reading was paused (the server's, not the
    client's, in a body's rate)."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(transport)
        self._loop = loop
        self._paused_at = 0.0
        self._paused_for = 0.0

    def pause_reading(self) -> None:
        if not self.read_paused:
            self._paused_at = self._loop.time()
        super().pause_reading()

    def resume_reading(self) -> None:
        if self.read_paused:
            self._paused_for += self._loop.time() - self._paused_at
        super().resume_reading()

    def paused_for(self, now: float) -> float:
        """Seconds reading has been paused since the connection opened, until ``now``."""
        return self._paused_for + (now - self._paused_at if self.read_paused else 0.0)


class _Lingering:
    """A connection's transport whose :meth:`close`, while the connection's request is
    still arriving, sends what is buffered and then end of file, and drops what the client
    still sends until it closes (bounded: the module's docstring). Everything else is the
    transport's own."""

    def __init__(self, transport: asyncio.Transport, protocol: TimedHttpProtocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self.draining = False
        self._left = _DRAIN_BYTES
        self._until = 0.0
        self._timer: asyncio.TimerHandle | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def is_closing(self) -> bool:
        return self.draining or self._transport.is_closing()

    def close(self, *, linger: bool = True) -> None:
        """``linger=False``: closed once the answer has left, as a transport's close (a
        client cut for stalling is not waited for)."""
        transport = self._transport
        if self.draining or transport.is_closing():
            return
        if not linger or not self._protocol.arriving() or not transport.can_write_eof():
            transport.close()
            return
        self.draining = True
        loop = self._protocol.loop
        self._until = loop.time() + _DRAIN_S
        transport.write_eof()  # after the answer: the client reads it whole
        transport.resume_reading()
        self._timer = loop.call_later(_LINGER_S, self.abort)

    def drop(self, size: int) -> None:
        """``size`` bytes the client sent while draining, dropped."""
        self._left -= size
        loop = self._protocol.loop
        if self._left < 0 or loop.time() >= self._until:
            self.abort()
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_later(min(_LINGER_S, self._until - loop.time()), self.abort)

    def abort(self) -> None:
        self.stop()
        self._transport.abort()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class TimedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the deadlines and limits of the module's
    docstring."""

    def __init__(self, config: Config, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        # here, not in the config: a --workers process unpickles its config (no __init__)
        self.logger.addFilter(_not_uvicorns_parser_warning)  # once: a filter is kept once
        # another Config (uvicorn's own): no deadlines and no cap, as uvicorn
        self.header_timeout = float(getattr(config, "header_timeout", 0.0))
        self.body_timeout = float(getattr(config, "body_timeout", 0.0))
        self.min_body_rate = float(getattr(config, "min_body_rate", 0.0))
        self.rate_grace = self.body_timeout or _RATE_GRACE_S
        self.max_connections = int(getattr(config, "max_connections", 0))
        self.max_per_address = int(getattr(config, "max_connections_per_ip", 0))
        self._address = ""  # the client's address, once counted in _PER_ADDRESS
        self.max_url = int(getattr(config, "max_url", 0)) or sys.maxsize
        self.max_head = int(getattr(config, "max_head", 0)) or sys.maxsize
        self.max_fields = int(getattr(config, "max_fields", 0)) or sys.maxsize
        self._deadline: asyncio.TimerHandle | None = None
        self._waiting = ""  # "headers", "body" or "", what the deadline is for
        self._begun = False  # a byte of the current request came
        self._last_chunk = 0.0
        self._chunk_paused = 0.0  # the reading paused before the last chunk
        self._send_stalled: asyncio.TimerHandle | None = None
        self._head = 0  # bytes of the current request's head
        self._fields = 0
        self._body_start = -1.0  # when its body's first byte came (-1: none yet)
        self._body_paused = 0.0  # the reading paused before it
        self._body_bytes = 0
        self._idle_since = 0.0  # when it last had no request in progress
        self._unupgraded = b""  # an upgrade request's head, without its Upgrade, to parse again

    # --- the deadline ----------------------------------------------------------------------
    def _arm(self, waiting: str, delay: float) -> None:
        self._disarm()
        if delay > 0:
            self._waiting = waiting
            self._deadline = self.loop.call_later(delay, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._waiting = ""

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self._waiting == "headers":
            self._waiting = ""
            self._give_up(
                f"the request's headers did not arrive within {self.header_timeout:g} s",
                answer=self._begun,
            )
            return
        # "body": late only if the client is the one holding it up
        cycle = self.cycle
        now = self.loop.time()
        if self.flow.read_paused or (cycle is not None and cycle.waiting_for_100_continue):
            # the server holds it (the app has not taken what came, or has not asked for
            # the body yet): the client's clock starts again from now
            self._last_chunk = now
            if isinstance(self.flow, _TimedFlow):
                self._chunk_paused = self.flow.paused_for(now)
            self._arm("body", self.body_timeout or self.rate_grace)
            return
        reason, next_check = self._body_verdict(now)
        if reason is None:
            self._arm("body", next_check)
            return
        self._waiting = ""
        answer = cycle is not None and not cycle.response_started
        if cycle is not None:
            cycle.disconnected = True  # the app's later answer goes nowhere ...
            # ... and the access log and metrics record this 408, not it (server/observe.py)
            state = cycle.scope.get("state")
            if isinstance(state, dict):
                state[TIMED_OUT] = True
        self._give_up(reason, answer=answer)

    def _body_verdict(self, now: float) -> tuple[str | None, float]:
        """Why the body is cut now (None: it is not), and else when to look again."""
        checks: list[float] = []
        paused = self.flow.paused_for(now) if isinstance(self.flow, _TimedFlow) else 0.0
        if self.body_timeout > 0:  # the server's pauses since the last chunk are not idle
            idle = now - self._last_chunk - (paused - self._chunk_paused)
            if idle >= self.body_timeout:
                return f"the request body stalled for {self.body_timeout:g} s", 0.0
            checks.append(self.body_timeout - idle)
        if self.min_body_rate > 0:
            if self._body_start < 0:  # no byte yet: the pause deadline's, or the grace
                checks.append(self.rate_grace)
            else:
                sending = now - self._body_start - (paused - self._body_paused)
                due = self._body_bytes / self.min_body_rate  # the time the bytes are worth
                if sending >= self.rate_grace and due < sending:
                    return (
                        f"the request body came at {self._body_bytes / sending:.0f} bytes/s "
                        f"over {sending:.0f} s, below the minimum of {self.min_body_rate:g}"
                    ), 0.0
                # what came is enough until then (no sooner than the grace's end)
                checks.append(max(self.rate_grace, due) - sending)
        return None, max(0.05, min(checks, default=0.0))

    def _give_up(self, reason: str, *, answer: bool) -> None:
        self.logger.info("client %s: %s; connection closed", self.client, reason)
        if answer:
            self.transport.write(_timeout_answer(f"{reason}; send the request again"))
        transport = self.transport
        if isinstance(transport, _Lingering):
            transport.close(linger=False)  # a client cut for stalling: not drained
        else:
            transport.close()  # after what is buffered has been sent ...
        self.loop.call_later(_LINGER_S, self.transport.abort)  # ... or not taken in time

    # --- refusals ----------------------------------------------------------------------------
    def send_400_response(self, msg: str) -> None:
        """The parser refused the request (uvicorn answered a text/plain 400): JSON, saying
        why, as the app's errors; a 414 or a 431 for a head over its limits."""
        error = sys.exc_info()[1]
        cause = error.__context__ if error is not None else None  # a callback's exception
        if isinstance(cause, _Refused):
            answer = cause.answer
            reason = str(cause)
        elif isinstance(cause, MemoryError):  # a callback (the body's) got no memory
            reason = "out of memory reading the request"
            answer = _answer(
                503,
                b"Service Unavailable",
                "out_of_memory",
                "the server ran out of memory reading this request (a memory limit, or "
                "other requests holding it); nothing of it was done: retry in a few "
                "seconds, or send less per request",
                b"retry-after: 5\r\n",
            )
        else:
            # llhttp's own words ("Duplicate Content-Length"); for a callback's failure
            # ("User callback error"), what failed in it (an unparseable URL)
            detail = str(cause or error or "") or "malformed request"
            reason = f"the request is not valid HTTP/1.1 ({detail})"
            answer = _answer(400, b"Bad Request", "bad_request", f"{reason}; send a valid request")
        self.logger.info("client %s: %s; connection closed", self.client, reason)
        self.transport.write(answer)
        self.transport.close()  # the rest of the request drained first, within bounds
        if not (isinstance(self.transport, _Lingering) and self.transport.draining):
            self.loop.call_later(_LINGER_S, self.transport.abort)

    # --- upgrades (none served) ------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        # uvicorn's, but an upgrade the parser stopped at is not one: what follows the head
        # is the request's body and the connection's next requests (uvicorn dropped it)
        transport = self.transport
        if isinstance(transport, _Lingering) and transport.draining:
            transport.drop(len(data))  # the rest of a request already answered
            return
        self._unset_keepalive_if_required()
        while data:  # a loop, not a recursion: a packet may hold many such requests
            try:
                self.parser.feed_data(data)
            except httptools.HttpParserError:
                self.send_400_response("Invalid HTTP request received.")
            except httptools.HttpParserUpgrade as stop:
                head, self._unupgraded = self._unupgraded, b""
                if head:  # (none: CONNECT, refused at its head)
                    self.logger.info(
                        "client %s asked to upgrade to %r, which is not served: answered as "
                        "HTTP/1.1",
                        self.client, (self._get_upgrade() or b"").decode("latin-1")[:40],
                    )  # fmt: skip
                    # the head again without its Upgrade, then the bytes after it, to a
                    # new parser (the old one, after a "Connection: close", would drop them)
                    data = head + data[int(stop.args[0]) :]
                    self.parser = httptools.HttpRequestParser(self)
                    # as uvicorn's: a pipelined request after a "close" is no error (the
                    # setting is missing before httptools 0.6.3; uvicorn guards it too)
                    with contextlib.suppress(AttributeError):
                        self.parser.set_dangerous_leniencies(lenient_data_after_close=True)
                    continue
            return

    def _without_upgrade(self) -> bytes:
        """The current request's head as it came, less its ``Upgrade`` header(s) and the
        ``upgrade`` token of its ``Connection`` header(s): a plain HTTP/1.1 request."""
        method = self.parser.get_method()
        version = self.parser.get_http_version().encode("ascii")
        lines = [method + b" " + self.url + b" HTTP/" + version]
        for name, value in self.headers:
            if name == b"upgrade":
                continue
            if name == b"connection":
                tokens = [t.strip() for t in value.split(b",")]
                value = b", ".join(t for t in tokens if t and t.lower() != b"upgrade")
                if not value:
                    continue
            lines.append(name + b": " + value)
        return b"\r\n".join(lines) + b"\r\n\r\n"

    def on_url(self, url: bytes) -> None:
        self._head += len(url)
        if self._head > self.max_url:
            raise _Refused(
                414, b"URI Too Long", "uri_too_long",
                f"the request target is longer than {self.max_url} bytes; send fewer or "
                "shorter query parameters (a search's filters go in its JSON body)",
            )  # fmt: skip
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head += len(name) + len(value) + 4
        self._fields += 1
        if self._head > self.max_head or self._fields > self.max_fields:
            raise _Refused(
                431, b"Request Header Fields Too Large", "headers_too_large",
                f"the request's head is over {self.max_head} bytes or {self.max_fields} "
                "header fields; send fewer and shorter headers",
            )  # fmt: skip
        super().on_header(name, value)

    # --- the connection cap --------------------------------------------------------------------
    def _idle(self) -> bool:
        """No request in progress: between two requests, or before the first byte."""
        return not self._begun and (self.cycle is None or self.cycle.response_complete)

    def _make_room(self, address: str = "") -> bool:
        """Close the connection idle longest (of ``address``, if given) to make room for
        this one; False if none is."""
        oldest: TimedHttpProtocol | None = None
        for other in self.connections:
            if (
                other is not self
                and isinstance(other, TimedHttpProtocol)
                and not other.transport.is_closing()
                and (not address or other._address == address)
                and other._idle()
                and (oldest is None or other._idle_since < oldest._idle_since)
            ):
                oldest = other
        if oldest is None:
            return False
        oldest._disarm()
        oldest.transport.close()  # as its keep-alive timeout would have
        return True

    def arriving(self) -> bool:
        """A request has begun to come and has not come whole (its head or its body)."""
        return self._begun or bool(self._unupgraded)

    # --- the protocol's events -------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_Lingering(transport, self))  # type: ignore[arg-type]
        self.flow = _TimedFlow(transport, self.loop)
        self._idle_since = self.loop.time()
        if 0 < self.max_connections < len(self.connections) and not self._make_room():
            self._refuse(
                503,
                b"Service Unavailable",
                f"the server has {self.max_connections} connections open, its limit, and "
                "none idle; try again in a moment",
                self.logger.warning,
            )
            return
        if self.max_per_address > 0 and self.client is not None and self._over_address_cap():
            return
        self._arm("headers", self.header_timeout)

    def _over_address_cap(self) -> bool:
        """Count this connection for its client's address; past the cap, make room among
        that address's own connections or refuse this one (429, closed)."""
        self._address = address = str(self.client[0]) if self.client else ""
        counts = _PER_ADDRESS.setdefault(self.server_state, Counter())
        counts[address] += 1
        if counts[address] <= self.max_per_address or self._make_room(address):
            return False
        self._refuse(
            429,
            b"Too Many Requests",
            f"this address has {self.max_per_address} connections open to the server, its "
            "limit, and none idle; reuse one (keep-alive) or try again in a moment",
            self.logger.info,
        )
        return True

    def _refuse(self, status: int, reason: bytes, message: str, log: Callable[..., None]) -> None:
        """Answer a connection there is no room for (``too_many_connections``, retry in a
        second) and close it."""
        log("client %s refused: %s", self.client, message)
        self.transport.write(
            _answer(status, reason, "too_many_connections", message, b"retry-after: 1\r\n")
        )
        self.transport.close()

    def eof_received(self) -> None:
        transport = self.transport
        if isinstance(transport, _Lingering) and transport.draining:
            transport.stop()  # the client sent all it had: the transport closes now

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if isinstance(self.transport, _Lingering):
            self.transport.stop()
        if self._address:
            counts = _PER_ADDRESS.get(self.server_state)
            if counts is not None:
                counts[self._address] -= 1
                if counts[self._address] <= 0:
                    del counts[self._address]
            self._address = ""
        if self._send_stalled is not None:
            self._send_stalled.cancel()
            self._send_stalled = None
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._begun = True
        self._head = self._fields = 0
        if self._waiting != "headers":  # a later request on a kept-alive connection
            self._arm("headers", self.header_timeout)

    def on_headers_complete(self) -> None:
        self._disarm()
        if self.parser.should_upgrade() and self.parser.get_method() != b"CONNECT":
            # the parser skips the body of a request that upgrades: no request yet; it is
            # parsed again, without the Upgrade, when the parser stops (data_received)
            self._unupgraded = self._without_upgrade()
            return
        before = self.cycle
        super().on_headers_complete()
        if self.cycle is not before:  # a request (not an upgrade): its body may follow
            self._last_chunk = now = self.loop.time()
            if isinstance(self.flow, _TimedFlow):
                self._chunk_paused = self.flow.paused_for(now)
            self._body_start = -1.0
            self._body_bytes = 0
            self._arm("body", self.body_timeout or (self.min_body_rate and self.rate_grace))

    def on_body(self, body: bytes) -> None:
        self._last_chunk = now = self.loop.time()
        if isinstance(self.flow, _TimedFlow):
            self._chunk_paused = self.flow.paused_for(now)
        if self._body_start < 0:
            self._body_start = now
            self._body_paused = self._chunk_paused
        self._body_bytes += len(body)
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._disarm()
        if self._unupgraded:  # not the request's end: it is parsed again (above)
            return
        self._begun = False
        super().on_message_complete()

    def on_response_complete(self) -> None:
        self._idle_since = self.loop.time()
        super().on_response_complete()

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._send_stalled is None and self.body_timeout > 0:
            self._send_stalled = self.loop.call_later(self.body_timeout, self._not_reading)

    def resume_writing(self) -> None:
        if self._send_stalled is not None:
            self._send_stalled.cancel()
            self._send_stalled = None
        super().resume_writing()

    def _not_reading(self) -> None:
        self._send_stalled = None
        self.logger.info(
            "client %s: took nothing of the answer for %g s; connection closed",
            self.client,
            self.body_timeout,
        )
        self.transport.abort()  # close() would wait for the buffer the client does not take
