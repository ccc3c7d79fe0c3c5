"""Reaching PostgreSQL through the pool while the server goes away and comes back.

psycopg_pool alone makes an outage slow at both ends: a call waits the pool's whole timeout
(30 s) for a connection the pool cannot make, and once the server is back the pool's
reconnection attempts, spaced by a doubling back-off, may not try again for half a minute
(measured: 33 s after a restart, and 10 s more for the API keys' pool); meanwhile idle
connections the server closed are handed out and fail their first statement. Here:

- an idle connection whose socket is readable was closed by the server (a shutdown sends
  "terminating connection" and closes it; a healthy idle connection is sent nothing): it
  is discarded and the next one taken, so a server restarted while the process was idle
  costs no call an error;
- a call that gets no connection within ``FIRST_WAIT_S`` opens one of its own: if the
  server does not accept it, the call fails at once with a :class:`StoreError` saying so
  (``memstrata serve``: 503 with ``Retry-After``); if it does, the pool was only busy and
  the call waits the rest of its timeout, as before. One such probe at a time; its answer
  holds for ``PROBE_TTL_S``, and while it says the server is down a call waits only
  ``DOWN_WAIT_S`` for the pool before it is refused;
- the pool gives up a reconnection after ``RECONNECT_S`` (psycopg_pool: 5 minutes), so its
  back-off never grows past a few seconds: the next call that finds no connection starts a
  new attempt at once.
"""

from __future__ import annotations

import asyncio  # async-only
import select
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from memstrata.errors import StoreError
from memstrata.store.postgres.connection import connect_failure, refusal

# sync: import threading

__all__ = ["FIRST_WAIT_S", "RECONNECT_S", "AsyncReach", "closed_by_server", "fill_pool"]

FIRST_WAIT_S = 2.0  # a free connection comes within this unless the pool is busy or cut off
DOWN_WAIT_S = 0.1  # ... and while the last probe found the server down
PROBE_TTL_S = 1.0
PROBE_CONNECT_S = 5  # connect_timeout of the probe (a host that drops packets)
RECONNECT_S = 5.0  # the pool's reconnect_timeout: the longest back-off between attempts


def closed_by_server(conn: Any) -> bool:
    """An idle connection with something to read: the server said goodbye (or the socket
    is gone). Costs one ``select`` with no wait, no round trip."""
    try:
        fd = conn.fileno()
    except Exception:  # closed already (psycopg raises OperationalError)
        return True
    try:
        readable, _, _ = select.select([fd], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


async def fill_pool(pool: Any, failed: list[BaseException], timeout: float) -> None:
    """Open ``pool`` and wait until it holds its ``min_size`` connections, or raise the
    first error its ``configure`` put in ``failed`` (at once: psycopg_pool's own wait
    retries a failing set-up until ``timeout`` and then says only "pool initialization
    incomplete"), or ``PoolTimeout`` after ``timeout`` seconds. The pool is left open
    either way (the caller closes it)."""
    from psycopg_pool import PoolTimeout

    await pool.open(wait=False)
    deadline = time.monotonic() + timeout
    while pool.get_stats().get("pool_available", 0) < pool.min_size:
        if failed:
            raise failed[0]
        if time.monotonic() >= deadline:
            raise PoolTimeout(f"pool initialization incomplete after {timeout} sec")
        await asyncio.sleep(0.01)


class AsyncReach:
    """Connections from a pool of ``conninfo``'s server, failing fast while it is down."""

    def __init__(self, conninfo: str, where: str) -> None:
        self.conninfo = conninfo
        self.where = where
        self._probe_lock = asyncio.Lock()
        self._probed_at = float("-inf")
        self._probe_error: str | None = None
        self._probe_fix: str | None = None  # connection.refusal's: an operator must act

    @asynccontextmanager
    async def connection(self, pool: Any, timeout: float | None = None) -> AsyncIterator[Any]:
        """``pool.connection(timeout)``, as psycopg_pool's, with the checks above."""
        conn = await self.checkout(pool, timeout)
        try:
            async with conn:
                yield conn
        finally:
            await pool.putconn(conn)

    async def checkout(self, pool: Any, timeout: float | None = None) -> Any:
        for _ in range(int(pool.max_size) + 1):
            conn = await self._get(pool, pool.timeout if timeout is None else timeout)
            if not closed_by_server(conn):
                return conn
            await conn.close()  # closed: the pool replaces it
            await pool.putconn(conn)
        return await self._get(pool, pool.timeout if timeout is None else timeout)

    async def _get(self, pool: Any, timeout: float) -> Any:
        from psycopg_pool import PoolTimeout

        first = min(FIRST_WAIT_S if self._probe_error is None else DOWN_WAIT_S, timeout)
        try:
            return await pool.getconn(timeout=first)
        except PoolTimeout:
            if first >= timeout:
                raise
        await self._probe()  # raises while the server does not accept connections
        return await pool.getconn(timeout=timeout - first)

    async def _probe(self) -> None:
        import psycopg

        async with self._probe_lock:
            if time.monotonic() - self._probed_at >= PROBE_TTL_S:
                from memstrata.store.postgres.coded import AsyncCodedConnection

                try:
                    probe = await AsyncCodedConnection.connect(
                        self.conninfo, autocommit=True, connect_timeout=PROBE_CONNECT_S
                    )
                except OSError as exc:  # this process's own (EMFILE: no descriptor left)
                    raise connect_failure(exc, self.where) from None
                except psycopg.Error as exc:
                    self._probe_error = str(exc).strip().splitlines()[0]
                    self._probe_fix = refusal(exc)
                else:
                    self._probe_error = self._probe_fix = None
                    await probe.close()
                self._probed_at = time.monotonic()
            error, fix = self._probe_error, self._probe_fix
        if fix is not None:  # a password changed, a role or database dropped ...
            raise StoreError(
                f"{self.where} refuses new connections ({error}): {fix}; nothing of this "
                "call was written"
            )
        if error is not None:
            raise StoreError(
                f"cannot reach {self.where} ({error}): the server is down or refuses "
                "connections; nothing of this call was written: retry in a few seconds",
                retryable=True,
            )
