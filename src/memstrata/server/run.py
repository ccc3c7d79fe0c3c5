"""Running an app under uvicorn until a signal stops it, with an exit status that says how
the stop went (``memstrata serve`` and ``memstrata mcp --transport http``).

uvicorn catches SIGTERM and SIGINT, stops gracefully, then raises the signal again on
itself, so a process stopped as asked still died "killed by SIGTERM" (exit -15, 143 from a
shell; session 21) and a supervisor could not tell a clean stop from a crash. Here:

- **0**: stopped on SIGTERM or SIGINT (or Ctrl+C) and shut down: the requests still
  running after ``--shutdown-timeout`` were cancelled (a write not yet committed is rolled
  back, never acknowledged; the log says how many) and the store closed. Cancelling them
  is what the timeout asks for, not a failure: an MCP client's open event stream is one
  such request at every stop.
- **1**: the stop was forced (a second Ctrl+C: the store was not closed), or the app's
  own shutdown failed (closing the store, stopping the background worker).
- **3**: the server did not start (uvicorn's ``STARTUP_FAILURE``: the port is taken, the
  store cannot be opened).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import Generator
from typing import Any

import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.server import HANDLED_SIGNALS

from .slow_clients import TimedConfig

__all__ = ["STOP_FORCED", "GracefulServer", "serve_until_stopped"]

log = logging.getLogger("memstrata.server")

STOP_FORCED = 1


def _cancelled_at_stop(record: logging.LogRecord) -> bool:
    """False for uvicorn's "Exception in ASGI application" traceback of a request cancelled
    by the shutdown timeout: its "Cancel N running task(s)" line has said it already, and a
    traceback per stalled client reads like a bug."""
    error = record.exc_info[1] if record.exc_info else None
    return not isinstance(error, asyncio.CancelledError)


class GracefulServer(uvicorn.Server):
    """uvicorn's server, without raising the stopping signal again once it has stopped;
    ``stopped_cleanly`` says whether the shutdown ran to its end."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.waited = False  # the wait for running requests ended (done, or timed out)

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        original = {sig: signal.signal(sig, self.handle_exit) for sig in HANDLED_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)

    async def shutdown(self, sockets: Any = None) -> None:
        # uvicorn cancels what still runs at the timeout and goes on (its log says how many)
        errors = logging.getLogger("uvicorn.error")
        errors.addFilter(_cancelled_at_stop)
        try:
            await super().shutdown(sockets)
        finally:
            errors.removeFilter(_cancelled_at_stop)
        self.waited = not self.force_exit

    @property
    def stopped_cleanly(self) -> bool:
        lifespan = getattr(self, "lifespan", None)
        return self.waited and not getattr(lifespan, "shutdown_failed", False)


def serve_until_stopped(app: Any, **options: Any) -> int:
    """Serve ``app`` (an ASGI app) with uvicorn ``options`` and the deadlines of
    :mod:`~memstrata.server.slow_clients`; the exit status of the module's docstring."""
    server = GracefulServer(TimedConfig(app, **options))
    try:
        server.run()
    except KeyboardInterrupt:  # before the server's own handlers were in place
        return STOP_FORCED
    if not server.started:
        return STARTUP_FAILURE
    return 0 if server.stopped_cleanly else STOP_FORCED
