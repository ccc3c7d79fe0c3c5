"""Second connections to a Memory's PostgreSQL schema, for tests that interleave a purge
with another session's locks: the order is fixed by row locks and ``pg_blocking_pids``,
never by sleeps (tests/purge28/test_purge_race_pg.py, tests/purge29/test_purge_lock_pg.py)."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg

from memstrata import Memory, Scope

__all__ = ["blocked_by", "purge_in_thread", "schema_conn"]


def schema_conn(mem: Memory, *, autocommit: bool = True) -> psycopg.Connection[Any]:
    """A connection of its own to ``mem``'s server, on ``mem``'s schema."""
    store: Any = mem.store
    conn = psycopg.connect(store.options.conninfo, autocommit=True)
    conn.execute(f'SET search_path TO "{store.options.schema}", public')
    conn.autocommit = autocommit
    return conn


def blocked_by(admin: Any, pid: int, done: threading.Event) -> None:
    """Until a backend waits for ``pid``'s locks (or the purge has ended)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not done.is_set():
        row = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))", (pid,)
        ).fetchone()
        if row[0]:
            return
        time.sleep(0.01)  # polling the server's lock table, not ordering by time
    if not done.is_set():
        raise AssertionError("the purge never waited")


def purge_in_thread(mem: Memory, scope: Scope) -> tuple[threading.Thread, dict[str, Any]]:
    """``mem.purge(scope)`` on a thread of its own, started; ``out`` gets ``"report"`` or
    ``"error"``, and its event ``"done"`` is set when the purge has ended."""
    out: dict[str, Any] = {"done": threading.Event()}

    def run() -> None:
        try:
            out["report"] = mem.purge(scope)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc
        finally:
            out["done"].set()

    t = threading.Thread(target=run)
    t.start()
    return t, out
