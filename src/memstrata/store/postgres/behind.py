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
How a batch of statements is made (one transaction, then each statement alone) is written
once, for both: ``memstrata/_async/store/postgres/batches.py`` (its generated sync twin,
:class:`~memstrata.store.postgres.batches.StatementBatches`, is used here).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Collection, Hashable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any

from .batches import StatementBatches
from .behind_types import BATCH, LOCK_TIMEOUT, Statement, log_failed

__all__ = ["BATCH", "LOCK_TIMEOUT", "Held", "Statement", "WriteBehind", "background", "wait_done"]


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
        self._cv = threading.Condition()
        self._submitted = 0  # how many writes were submitted (each one's number)
        # number -> the rows it changes, of the writes not made yet, in the order submitted
        self._pending: dict[int, tuple[Hashable, ...]] = {}
        self._rows: Counter[Hashable] = Counter()  # rows the pending writes change
        self._pool: ThreadPoolExecutor | None = None
        self._mine = threading.local()  # set on the background thread: it never waits
        self._batches = StatementBatches(transaction)  # queue changed under self._cv

    def submit(self, write: Callable[[], None] | Statement, rows: Iterable[Hashable] = ()) -> None:
        """Run ``write`` on the background thread (at once, here, once closed); ``rows``
        are the keys of the rows it changes (see :meth:`settle_rows`). A :class:`Statement`
        joins the statements queued just before it that no transaction has taken yet."""
        keys = tuple(rows)
        with self._cv:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix=f"{self._name}-behind")
            self._submitted += 1
            number = self._submitted
            self._pending[number] = keys
            self._rows.update(keys)
            pool = self._pool
            group = self._batches.join(write)
        try:
            pool.submit(self._background, write, group, number)
        except RuntimeError:  # shut down (closing): write it here instead
            self._run(write, group, number)

    def _background(
        self, write: Callable[[], None] | Statement, group: list[Statement] | None, number: int
    ) -> None:
        self._mine.inside = True
        self._run(write, group, number)

    def _run(
        self, write: Callable[[], None] | Statement, group: list[Statement] | None, number: int
    ) -> None:
        try:
            self._write(write, group)
        except Exception as exc:  # a counter or cache entry: logged, as on the thread
            log_failed(exc)
        finally:
            self._done(number)

    def _write(self, write: Callable[[], None] | Statement, group: list[Statement] | None) -> None:
        if group is not None:
            with self._cv:
                batch = self._batches.take(group)
            self._batches.make(batch)
        elif not isinstance(write, Statement):
            write()

    def _done(self, number: int) -> None:
        with self._cv:
            keys = self._pending.pop(number)
            self._rows.subtract(keys)
            for k in keys:
                if self._rows[k] <= 0:
                    del self._rows[k]
            self._cv.notify_all()

    def _made_through(self, number: int) -> bool:
        """Every write up to ``number`` is made (the pending ones are in submit order)."""
        return not self._pending or next(iter(self._pending)) > number

    def settle(self) -> None:
        """Wait until every write submitted so far is made (not on the background thread);
        not for those submitted while it waits (a steady stream of searches would hold it
        up)."""
        if not self._pending or getattr(self._mine, "inside", False):
            return
        with self._cv:
            last = self._submitted
            self._cv.wait_for(lambda: self._made_through(last))

    def pending_rows(self) -> frozenset[Hashable]:
        """The rows the writes not yet made change (a read that cannot name its rows in
        advance takes this before it reads, then reads those of them it got again)."""
        if not self._rows:
            return frozenset()
        with self._cv:
            return frozenset(self._rows)

    def settle_rows(self, rows: Collection[Hashable]) -> None:
        """Wait only while a write submitted so far changes one of ``rows``."""
        if not self._rows or getattr(self._mine, "inside", False):
            return
        with self._cv:
            wanted = {k for k in rows if k in self._rows}
            if not wanted:  # most reads: none of their rows is being written
                return
            last = max(n for n, keys in self._pending.items() if not wanted.isdisjoint(keys))
            self._cv.wait_for(lambda: self._made_through(last))

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
