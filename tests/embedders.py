"""The one base of the tests' embedders that change how a call goes (held until a test
lets it go, gated, slowed) but not what it answers: the hashing embedder, wrapped; and
``Rotated``, another model of the same dims (a re-embedding's new model)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memstrata.embedder.base import Matrix
from memstrata.embedder.hashing import HashingEmbedder

__all__ = ["Rotated", "WrappedHashing"]


class WrappedHashing:
    """The hashing embedder's ``model_id``, ``dims`` and vectors. A subclass overrides
    :meth:`embed_batch` (wait, count, sleep) and ends with ``super().embed_batch(...)``.

    A wrapper, not a ``HashingEmbedder`` subclass: the async adapter runs that very class
    inline on the event loop (``aio/providers.py``), and these embedders block."""

    def __init__(self, dims: int = 256) -> None:
        self._inner = HashingEmbedder(dims)

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dims(self) -> int:
        return self._inner.dims

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        return self._inner.embed_batch(texts, query=query)


class Rotated(WrappedHashing):
    """Another model of the same dims: the hashing vectors, coordinates reversed."""

    @property
    def model_id(self) -> str:
        return "rotated-256"

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        return np.ascontiguousarray(super().embed_batch(texts, query=query)[:, ::-1])
