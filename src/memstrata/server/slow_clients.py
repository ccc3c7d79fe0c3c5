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

The checks cost one timer per connection, re-armed at most once per deadline; a chunk
that arrives only records the time.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .observe import TIMED_OUT

__all__ = ["TimedConfig", "TimedHttpProtocol"]

# After a 408, the connection is closed once the answer has left; a client that does not
# read it either is cut this much later.
_LINGER_S = 1.0


class TimedConfig(Config):
    """uvicorn's ``Config`` carrying the two deadlines in seconds, 0 for none (picklable,
    for ``--workers``); its protocol is :class:`TimedHttpProtocol` unless ``http`` says
    otherwise. The CLI's options have the defaults (``memstrata serve --help``)."""

    def __init__(
        self, app: Any, *, header_timeout: float, body_timeout: float, **options: Any
    ) -> None:
        options.setdefault("http", TimedHttpProtocol)
        super().__init__(app, **options)
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout


def _timeout_answer(message: str) -> bytes:
    body = json.dumps(
        {"error": {"code": "request_timeout", "message": message, "fields": []}}
    ).encode()
    return (
        b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body
    )


class TimedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the deadlines of the module's docstring."""

    def __init__(self, config: Config, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        # another Config (uvicorn's own): no deadlines, as uvicorn
        self.header_timeout = float(getattr(config, "header_timeout", 0.0))
        self.body_timeout = float(getattr(config, "body_timeout", 0.0))
        self._deadline: asyncio.TimerHandle | None = None
        self._waiting = ""  # "headers", "body" or "", what the deadline is for
        self._begun = False  # a byte of the current request came
        self._last_chunk = 0.0
        self._send_stalled: asyncio.TimerHandle | None = None

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
            self._arm("body", self.body_timeout)
            return
        idle = now - self._last_chunk
        if idle < self.body_timeout:  # a chunk came meanwhile
            self._arm("body", self.body_timeout - idle)
            return
        self._waiting = ""
        answer = cycle is not None and not cycle.response_started
        if cycle is not None:
            cycle.disconnected = True  # the app's later answer goes nowhere ...
            # ... and the access log and metrics record this 408, not it (server/observe.py)
            state = cycle.scope.get("state")
            if isinstance(state, dict):
                state[TIMED_OUT] = True
        self._give_up(f"the request body stalled for {self.body_timeout:g} s", answer=answer)

    def _give_up(self, reason: str, *, answer: bool) -> None:
        self.logger.info("client %s: %s; connection closed", self.client, reason)
        if answer:
            self.transport.write(_timeout_answer(f"{reason}; send the request again"))
        self.transport.close()  # after what is buffered has been sent ...
        self.loop.call_later(_LINGER_S, self.transport.abort)  # ... or not taken in time

    # --- the protocol's events -------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm("headers", self.header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._send_stalled is not None:
            self._send_stalled.cancel()
            self._send_stalled = None
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._begun = True
        if self._waiting != "headers":  # a later request on a kept-alive connection
            self._arm("headers", self.header_timeout)

    def on_headers_complete(self) -> None:
        self._disarm()
        before = self.cycle
        super().on_headers_complete()
        if self.cycle is not before:  # a request (not an upgrade): its body may follow
            self._last_chunk = self.loop.time()
            self._arm("body", self.body_timeout)

    def on_body(self, body: bytes) -> None:
        self._last_chunk = self.loop.time()
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._disarm()
        self._begun = False
        super().on_message_complete()

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
