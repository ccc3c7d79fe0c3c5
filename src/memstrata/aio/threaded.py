"""A sync store presented as an :class:`~memstrata._async.store.base.AsyncStore`, on threads.

SQLite (a local file, driven by the standard library's blocking ``sqlite3``) and the
in-process ``memory://`` store have no async driver; :func:`threaded` runs each of their
calls on a small pool of threads owned by the adapter, so the event loop never waits on a
disk read or a lock. This is the one place where the async memory uses threads for storage;
PostgreSQL and Redis are natively async (psycopg's and redis-py's async clients).

- Each method of the sync store becomes a coroutine with the same arguments and result;
  attributes that are not methods (``url``) are read through.
- A transaction runs entirely on one thread of its own (SQLite ties a transaction to the
  connection its thread holds): ``async with store.transaction() as tx`` opens it, every
  ``await tx.<method>`` runs on that thread, and leaving the block commits or rolls back
  there. The writes that answer nothing (``insert``, ``append_turns``, ``replace``,
  ``enqueue``) are queued and run, in order, with the next call that answers something or
  with the commit, in one trip to the thread (their arguments are used then: do not change
  them meanwhile); the sync transaction begins with the first of those trips. So
  ``add_messages`` (append the turns, enqueue their job, commit) is one trip where it was
  four, and the write lock is held only while the thread runs them, never while a trip
  waits for a busy event loop. Once ``FLUSH_AT`` records (or jobs) are queued they run at
  once, in one trip, so a long unit of work (an import, a page of records an insert) holds
  a page of writes in memory, not all of them. A queued write's error (a conflict, an id
  that exists) is raised where its trip runs: by the write that filled the queue, the next
  answering call, or the end of the block, which then rolls back; what the block did
  meanwhile was in memory only.
  Cancelling a coroutine inside the block rolls back (queued writes are never run).
  A call on the store itself (not on ``tx``) inside the block runs on the transaction's
  thread too, after its queued writes, as the sync store's would on the caller's thread:
  a read reads as it would there, a write is the sync store's nested write (SQLite refuses
  it: it cannot nest transactions). On a thread of the pool it waited forever for the
  store's lock, which the transaction's thread holds.
- ``scan`` and ``dump_*`` stream their batches from a generator advanced on one thread.
- A transaction's or a stream's thread is made when none is idle; given back, it is kept
  for the next one while fewer than ``threads`` are idle, else it ends once its last call
  has run (session 30: a burst of N at once had left N threads for the store's life).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager, AbstractContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..errors import closed_store
from .cancellation import to_the_end

if TYPE_CHECKING:
    from .._async.store.base import AsyncStore, AsyncUnitOfWork
    from ..store.base import Store, UnitOfWork

__all__ = ["ThreadedStore", "threaded"]

T = TypeVar("T")

# Methods whose sync result is a generator of batches: streamed, not returned whole.
_STREAMS = frozenset(
    {
        "scan",
        "list_pages",
        "history_parts",
        "dump_records",
        "dump_cache",
        "dump_jobs",
        "dump_audit",
    }
)
# Unit-of-work methods that answer nothing: queued until a call that answers or the commit.
_QUEUED = frozenset({"insert", "append_turns", "replace", "enqueue"})
# Queued writes run at once when this many records (or jobs) wait.
FLUSH_AT = 1000
# Sync-only context managers of a store (SQLite's shared/exclusive file locks): entered
# and left on one thread, like a transaction.
_CONTEXTS = frozenset({"shared", "exclusive"})


def threaded(store: Store, *, threads: int = 4) -> AsyncStore:
    """``store`` as an ``AsyncStore`` whose calls run on ``threads`` threads of its own."""
    return cast("AsyncStore", ThreadedStore(store, threads=threads))


class _OneThread:
    """A thread that runs calls one after another (a transaction's or a stream's)."""

    def __init__(self, name: str) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)

    async def run(self, fn: Callable[[], T]) -> T:
        # the caller's context goes with the call (as asyncio.to_thread): a job's fence
        return await asyncio.get_running_loop().run_in_executor(
            self._executor, contextvars.copy_context().run, fn
        )

    def shutdown(self) -> None:
        self._executor.shutdown()

    def retire(self) -> None:
        """End the thread once what it was given has run, without waiting for it."""
        self._executor.shutdown(wait=False)

    def alive(self) -> bool:
        return any(t.is_alive() for t in self._executor._threads)


class ThreadedStore:
    """See the module docstring; build it with :func:`threaded`."""

    def __init__(self, store: Store, *, threads: int = 4) -> None:
        self.sync = store  # the wrapped store (tests and admin tools)
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="memstrata-store")
        # single threads for transactions and streams: at most ``threads`` kept idle, the
        # others ended when given back (a burst of 200 transactions at once made 200 threads,
        # kept for the process's life before session 30)
        self._spare: list[_OneThread] = []
        self._max_spare = threads
        self._dedicated: list[_OneThread] = []  # every one made and not ended (joined by aclose)
        self._retired: list[_OneThread] = []  # ended, maybe still finishing (joined by aclose)
        self._closed = False
        # the transaction the calling task has open on this store (its nested calls go to
        # that transaction's thread)
        self._open: contextvars.ContextVar[_Transaction | None] = contextvars.ContextVar(
            f"memstrata_threaded_tx_{id(self)}", default=None
        )

    def _check_open(self) -> None:
        if self._closed:  # the threads are gone: say so, not "cannot schedule new futures"
            raise closed_store(self.sync)

    async def _run(self, fn: Callable[[], T]) -> T:
        self._check_open()
        return await asyncio.get_running_loop().run_in_executor(
            self._pool, contextvars.copy_context().run, fn
        )

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.sync, name)  # AttributeError for what the store lacks
        if not callable(target):
            return target
        if name in _STREAMS:
            return functools.partial(self._stream, target)
        if name in _CONTEXTS:
            return functools.partial(self._context, target)

        @functools.wraps(target)
        async def call(*args: Any, **kwargs: Any) -> Any:
            tx = self._open.get()
            if tx is not None and not tx.ended:  # (a task started in the block outlives it)
                return await tx.beside(functools.partial(target, *args, **kwargs))
            return await self._run(functools.partial(target, *args, **kwargs))

        return call

    def transaction(self) -> AbstractAsyncContextManager[AsyncUnitOfWork]:
        return self._transaction()

    async def aclose(self) -> None:
        """Close the sync store (flushing its counters) on a thread, then end the threads
        (joined off the loop: none outlives the store). A second call does nothing."""
        if self._closed:
            return
        try:
            await self._run(self.sync.close)
        finally:
            self._closed = True
            threads = self._dedicated + self._retired
            self._dedicated, self._spare, self._retired = [], [], []

            def join() -> None:
                self._pool.shutdown()
                for thread in threads:
                    thread.shutdown()

            await asyncio.to_thread(join)

    # --- one thread for a whole transaction or stream ---
    @asynccontextmanager
    async def _thread(self) -> AsyncIterator[_OneThread]:
        """A single thread of the store's, for one transaction or stream, then back to the
        spares (calls queue on it, so one still finishing runs before the next user's)."""
        self._check_open()
        if self._spare:
            thread = self._spare.pop()
        else:
            thread = _OneThread("memstrata-tx")
            self._dedicated.append(thread)
        try:
            yield thread
        finally:
            if len(self._spare) < self._max_spare:
                self._spare.append(thread)
            else:  # ended once its last call (a commit, a roll back) has run
                if thread in self._dedicated:
                    self._dedicated.remove(thread)
                thread.retire()
                self._retired = [t for t in self._retired if t.alive()]
                self._retired.append(thread)

    @asynccontextmanager
    async def _entered(
        self, factory: Callable[..., AbstractContextManager[T]], *args: Any, **kwargs: Any
    ) -> AsyncIterator[tuple[T, _OneThread]]:
        """Enter a sync context manager on one thread, leave it on the same thread."""
        async with self._thread() as thread:
            manager = factory(*args, **kwargs)
            entered: list[T] = []  # on the thread: whether it entered (a cancelled caller
            # stops waiting for the enter, not the enter itself)

            def enter() -> T:
                entered.append(manager.__enter__())
                return entered[0]

            def leave_if_entered(exc: BaseException) -> None:
                if entered:
                    manager.__exit__(type(exc), exc, exc.__traceback__)

            try:
                value = await thread.run(enter)
            except BaseException as exc:
                await _to_the_end(thread.run(functools.partial(leave_if_entered, exc)))
                raise
            try:
                yield value, thread
            except BaseException as exc:
                # roll back on the same thread, even when the caller was cancelled
                undo = functools.partial(manager.__exit__, type(exc), exc, exc.__traceback__)
                await _to_the_end(thread.run(undo))
                raise
            else:
                await _to_the_end(thread.run(lambda: manager.__exit__(None, None, None)))

    @asynccontextmanager
    async def _context(
        self, factory: Callable[..., AbstractContextManager[T]], *args: Any, **kwargs: Any
    ) -> AsyncIterator[T]:
        async with self._entered(factory, *args, **kwargs) as (value, _thread):
            yield value

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[AsyncUnitOfWork]:
        async with self._thread() as thread:
            tx = _Transaction(self.sync.transaction, thread)
            mine = self._open.set(tx)
            try:
                yield cast("AsyncUnitOfWork", _ThreadedUnitOfWork(tx))
            except BaseException as exc:
                # roll back on the same thread, even when the caller was cancelled
                await _to_the_end(tx.end(exc))
                raise
            else:
                await _to_the_end(tx.end(None))
            finally:
                self._open.reset(mine)

    async def _stream(
        self, method: Callable[..., Generator[T, None, None]], *args: Any, **kwargs: Any
    ) -> AsyncIterator[T]:
        """The batches of a sync generator, each produced on the stream's one thread."""
        async with self._thread() as thread:
            generator = method(*args, **kwargs)
            done = object()
            try:
                while True:
                    item = await thread.run(lambda: next(generator, done))
                    if item is done:
                        return
                    yield cast(T, item)
            finally:  # on its thread, even when the caller is cancelled again meanwhile
                await _to_the_end(thread.run(generator.close))


async def _to_the_end(end: Awaitable[object]) -> None:
    """Await the end of a transaction (commit or roll back), which runs on its thread to the
    end even when the caller is cancelled meanwhile. Its outcome then reaches no caller: it
    is logged as a warning (a memory closed under a cancelled write made its commit fail:
    nothing was written, an error would be too loud)."""
    await to_the_end(
        end, unheard="a cancelled call's transaction did not end cleanly", level=logging.WARNING
    )


class _Transaction:
    """One sync transaction driven from the loop (see the module's docstring): begun on its
    thread by the first trip, its answerless writes queued until the next trip."""

    def __init__(
        self, factory: Callable[[], AbstractContextManager[UnitOfWork]], thread: _OneThread
    ) -> None:
        self._factory = factory
        self._thread = thread
        self._manager: AbstractContextManager[UnitOfWork] | None = None
        self._uow: UnitOfWork | None = None
        self._queued: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self._waiting = 0  # records (or jobs) in the queued writes
        self.ended = False

    def _flush(self) -> UnitOfWork:
        """Begin (first time) and run the queued writes; on the transaction's thread."""
        if self._uow is None:
            manager = self._factory()
            self._uow = manager.__enter__()
            self._manager = manager
        queued, self._queued, self._waiting = self._queued, [], 0
        for name, args, kwargs in queued:
            getattr(self._uow, name)(*args, **kwargs)
        return self._uow

    async def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if name in _QUEUED:
            self._queued.append((name, args, kwargs))
            first = args[0] if args else None
            self._waiting += len(first) if isinstance(first, list | tuple) else 1
            if self._waiting >= FLUSH_AT:
                await self._thread.run(self._flush)
            return None
        return await self._thread.run(lambda: getattr(self._flush(), name)(*args, **kwargs))

    async def beside(self, fn: Callable[[], T]) -> T:
        """A call on the store made inside this transaction: on its thread, once it began
        and ran its queued writes (where the sync store's own thread would make it)."""

        def run() -> T:
            self._flush()
            return fn()

        return await self._thread.run(run)

    async def end(self, error: BaseException | None) -> None:
        """Commit (``error`` None: the queued writes first) or roll back, on the thread."""
        self.ended = True
        if error is not None:
            self._queued, self._waiting = [], 0

            def roll_back() -> None:
                # decided on the thread, after any trip still running there: a caller
                # cancelled while its trip began the transaction saw no transaction yet,
                # and one left open held SQLite's write lock for good
                if self._manager is not None:
                    self._manager.__exit__(type(error), error, error.__traceback__)

            await self._thread.run(roll_back)
            return

        def commit() -> None:
            try:
                self._flush()
            except BaseException as exc:
                if self._manager is not None:
                    self._manager.__exit__(type(exc), exc, exc.__traceback__)
                raise
            assert self._manager is not None
            self._manager.__exit__(None, None, None)

        await self._thread.run(commit)


class _ThreadedUnitOfWork:
    """The sync unit of work, its calls on the transaction's thread (or queued)."""

    def __init__(self, tx: _Transaction) -> None:
        self._tx = tx

    def __getattr__(self, name: str) -> Any:
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await self._tx.call(name, args, kwargs)

        return call
