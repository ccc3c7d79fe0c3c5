"""Writes a search need not wait for: access counters and query-embedding cache entries.

A search on PostgreSQL ends with two writes (the hits' access counters, the query's
embedding in the cache), each a round trip and a commit. They run here, in order, on one
background thread, so the search returns without them. Every other use of the store first
waits until they are written (:meth:`WriteBehind.settle`, called before a connection is
taken), so this process still reads its own writes, and a purge never runs before a write
of the data it deletes. A crash may lose the writes not yet made, which the Counters
contract allows (and a cache entry is only a cache). A write that fails is logged, not
raised: the search that caused it has already returned. Each is a :class:`Statement`, and
the statements queued while an earlier write is being made commit together, in one
transaction (under load a handful of searches' writes: commits per HTTP request on the
load test 8.4 → 7.5).

Reads that cannot see these writes do not wait for them: a search's candidate reads (the
lexical postings, the vector cache's state) read no counter and no cache entry, and a read
of records by id waits only while a pending write changes one of those records
(:meth:`WriteBehind.settle_rows`; each write names the rows it changes). Waiting for
everything at the start of every search was most of its latency: the counters written
behind one ``build_context`` held up the next search by 5-20 ms (measured, 10k records).

A sync-only shell: the async store (``memstrata._async.store.postgres``) imports
``memstrata.aio.pg_behind`` instead, which awaits these writes where they are submitted.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Collection, Hashable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

__all__ = ["BATCH", "LOCK_TIMEOUT", "Held", "Statement", "WriteBehind", "background", "wait_done"]

_log = logging.getLogger("memstrata.store.postgres")

BATCH = 64  # statements at most in one transaction behind the searches
# A batch locks the rows of its statements one statement after another, so two processes'
# batches can wait for each other's rows (a deadlock PostgreSQL breaks after a second):
# a batch waits for a row lock at most this long, then its statements go one at a time.
LOCK_TIMEOUT = "SET LOCAL lock_timeout = '100ms'"


@dataclass(frozen=True, slots=True, eq=False)
class Statement:
    """A write behind a search that is one SQL statement (a touch, a cache upsert).

    Statements queued one after another are made in one transaction, one commit for all of
    them (under load a search's touch and cache entry and those of the searches queued
    with it): a transaction and a commit cost more than the statement. If that
    transaction fails, each statement is tried again alone, so one bad statement loses no
    other. ``done`` runs once the statement is committed or has failed."""

    sql: str
    params: Sequence[Any]
    done: Callable[[], None] | None = None


class Held(threading.local):
    """How many pool connections this thread holds (nested uses), so it never waits for
    the writes behind a search while holding one."""

    n = 0


class WriteBehind:
    """``transaction()``: the transaction :class:`Statement` writes are made in."""

    def __init__(
        self, name: str, transaction: Callable[[], AbstractContextManager[Any]] | None = None
    ) -> None:
        self._name = name
        self._transaction = transaction
        self._cv = threading.Condition()
        self._pending = 0
        self._rows: Counter[Hashable] = Counter()  # rows the pending writes change
        self._pool: ThreadPoolExecutor | None = None
        self._mine = threading.local()  # set on the background thread: it never waits
        self._group: list[Statement] | None = None  # statements the next batch takes

    def submit(self, write: Callable[[], None] | Statement, rows: Iterable[Hashable] = ()) -> None:
        """Run ``write`` on the background thread (at once, here, once closed); ``rows``
        are the keys of the rows it changes (see :meth:`settle_rows`). A :class:`Statement`
        joins the statements queued just before it that no transaction has taken yet."""
        keys = tuple(rows)
        group: list[Statement] | None = None
        with self._cv:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix=f"{self._name}-behind")
            self._pending += 1
            self._rows.update(keys)
            pool = self._pool
            if isinstance(write, Statement):
                if self._group is None or len(self._group) >= BATCH:
                    self._group = []
                self._group.append(write)
                group = self._group
            else:
                self._group = None  # statements after this write are made after it
        try:
            pool.submit(self._run, write, group, keys)
        except RuntimeError:  # shut down (closing): write it here instead
            try:
                self._write(write, group)
            finally:
                self._done(keys)

    def _run(
        self,
        write: Callable[[], None] | Statement,
        group: list[Statement] | None,
        keys: tuple[Hashable, ...],
    ) -> None:
        self._mine.inside = True
        try:
            self._write(write, group)
        except Exception as exc:  # a counter or cache entry: logged, the search returned
            _log.warning("memstrata: a counter or cache write after a search failed: %s", exc)
        finally:
            self._done(keys)

    def _write(self, write: Callable[[], None] | Statement, group: list[Statement] | None) -> None:
        if group is not None:
            self._make(group)
        elif not isinstance(write, Statement):
            write()

    def _make(self, group: list[Statement]) -> None:
        """Make the statements of ``group`` not made yet (an earlier job of the group may
        have made them all), in one transaction."""
        with self._cv:
            batch = list(group)
            group.clear()
            if self._group is group:
                self._group = None
        if not batch:
            return
        try:
            try:
                self._execute(batch)
            except Exception:
                if len(batch) == 1:
                    raise
                for statement in batch:  # one at a time: a bad one loses no other
                    try:
                        self._execute([statement])
                    except Exception as exc:
                        _log.warning(
                            "memstrata: a counter or cache write after a search failed: %s", exc
                        )
        finally:
            for statement in batch:
                if statement.done is not None:
                    statement.done()

    def _execute(self, batch: list[Statement]) -> None:
        if self._transaction is None:
            raise RuntimeError("this write-behind was made without a transaction")
        with self._transaction() as conn:
            if len(batch) > 1:
                conn.execute(LOCK_TIMEOUT)
            for statement in batch:
                conn.execute(statement.sql, statement.params)

    def _done(self, keys: tuple[Hashable, ...]) -> None:
        with self._cv:
            self._pending -= 1
            self._rows.subtract(keys)
            for k in keys:
                if self._rows[k] <= 0:
                    del self._rows[k]
            self._cv.notify_all()

    def settle(self) -> None:
        """Wait until every write submitted so far is made (not on the background thread)."""
        if self._pending == 0 or getattr(self._mine, "inside", False):
            return
        with self._cv:
            self._cv.wait_for(lambda: self._pending == 0)

    def pending_rows(self) -> frozenset[Hashable]:
        """The rows the writes not yet made change (a read that cannot name its rows in
        advance takes this before it reads, then reads those of them it got again)."""
        if not self._rows:
            return frozenset()
        with self._cv:
            return frozenset(self._rows)

    def settle_rows(self, rows: Collection[Hashable]) -> None:
        """Wait only while a pending write changes one of ``rows``."""
        if not self._rows or getattr(self._mine, "inside", False):
            return
        with self._cv:
            self._cv.wait_for(lambda: not any(k in self._rows for k in rows))

    def close(self) -> None:
        """Make the pending writes, then stop the thread."""
        self.settle()
        with self._cv:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)


# The sync shells of memstrata/aio/pg_behind.py (the async store's tasks): a store's
# statistics refresh runs on a daemon thread of its own.
def background(target: Callable[[], None], name: str) -> threading.Thread:
    """Run ``target()`` on a new daemon thread named ``name``."""
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return thread


def wait_done(handle: threading.Thread) -> None:
    """Wait until ``handle`` (from :func:`background`) is done."""
    handle.join()
