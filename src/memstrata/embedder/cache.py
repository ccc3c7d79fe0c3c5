"""Content-hash embedding cache: unchanged text is never embedded twice.

Any object with ``cached_vectors``/``cache_vectors`` is a cache; every ``Store`` has both,
so a store persists the cache alongside the records. :class:`LRUEmbeddingCache` is the
in-process cache for use without a store.

Keys are ``content_hash(text)`` for passages and ``"q:" + content_hash(text)`` for
queries: asymmetric models embed the two differently, and keeping passages under the bare
hash lets a store match its records' own content hashes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from ..text import content_hash
from .base import Embedder, Matrix, check_vectors

__all__ = ["CachedEmbedder", "EmbeddingCache", "LRUEmbeddingCache", "cache_key"]

Vector = Matrix  # a 1-D float32 row; npt does not distinguish ranks


@runtime_checkable
class EmbeddingCache(Protocol):
    def cached_vectors(self, model_id: str, hashes: Sequence[str]) -> dict[str, Vector]: ...

    def cache_vectors(self, model_id: str, vectors: Mapping[str, Vector]) -> None: ...


def cache_key(text: str, *, query: bool) -> str:
    """The cache key of ``text`` embedded as a query or as a passage."""
    digest = content_hash(text)
    return "q:" + digest if query else digest


class LRUEmbeddingCache:
    """A bounded, thread-safe, in-memory :class:`EmbeddingCache`."""

    def __init__(self, max_entries: int = 10_000) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, got {max_entries}")
        self._max = max_entries
        self._data: OrderedDict[tuple[str, str], Vector] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._data)

    def cached_vectors(self, model_id: str, hashes: Sequence[str]) -> dict[str, Vector]:
        found: dict[str, Vector] = {}
        with self._lock:
            for h in hashes:
                vec = self._data.get((model_id, h))
                if vec is not None:
                    self._data.move_to_end((model_id, h))
                    found[h] = vec
        return found

    def cache_vectors(self, model_id: str, vectors: Mapping[str, Vector]) -> None:
        with self._lock:
            for h, vec in vectors.items():
                self._data[(model_id, h)] = vec
                self._data.move_to_end((model_id, h))
            while len(self._data) > self._max:
                self._data.popitem(last=False)


class CachedEmbedder:
    """Wraps an embedder so only texts missing from ``cache`` reach it, in one call."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache | None = None) -> None:
        self._inner = inner
        self._cache: EmbeddingCache = cache if cache is not None else LRUEmbeddingCache()

    @property
    def inner(self) -> Embedder:
        return self._inner

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dims(self) -> int:
        return self._inner.dims

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        items = list(texts)
        dims = self.dims
        if not items:
            return np.zeros((0, dims), dtype=np.float32)
        keys = [cache_key(t, query=query) for t in items]
        unique = list(dict.fromkeys(keys))
        found = self._cache.cached_vectors(self.model_id, unique)
        missing: dict[str, str] = {}  # key -> first text with that key
        for key, text in zip(keys, items, strict=True):
            if key not in found and key not in missing:
                missing[key] = text
        if missing:
            fresh = self._inner.embed_batch(list(missing.values()), query=query)
            fresh = check_vectors(fresh, len(missing), dims, self.model_id)
            new = {key: fresh[i] for i, key in enumerate(missing)}
            self._cache.cache_vectors(self.model_id, new)
            found = {**found, **new}
        rows = []
        for key in keys:
            vec = np.asarray(found[key], dtype=np.float32).reshape(-1)
            rows.append(vec)
        return check_vectors(np.stack(rows), len(items), dims, self.model_id)
