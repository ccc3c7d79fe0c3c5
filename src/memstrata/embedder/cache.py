"""Content-hash embedding cache: unchanged text is never embedded twice.

Two levels:

- a durable, per-user cache: any object with ``cached_vectors(scope, model, keys)`` and
  ``cache_vectors(scope, model, vectors)`` (every ``Store`` has both). Entries are keyed by
  tenant, user, model and text hash, so a user's purge deletes them, query embeddings
  included. :meth:`CachedEmbedder.for_scope` gives an embedder that reads and writes it;
- a bounded in-process LRU keyed by model and text hash only, shared by every call of one
  :class:`CachedEmbedder` (scoped or not). It never reaches disk; :meth:`CachedEmbedder.forget`
  empties it (``Memory.purge`` does), so a purged user's texts do not linger in it either.

Keys are ``content_hash(text)`` for passages and ``"q:" + content_hash(text)`` for queries:
asymmetric models embed the two differently.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from ..scope import Scope
from ..text import content_hash
from .base import Embedder, Matrix, check_vectors
from .batching import CoalescingEmbedder

__all__ = ["CachedEmbedder", "EmbeddingCache", "LRUEmbeddingCache", "ScopedEmbedder", "cache_key"]

Vector = Matrix  # a 1-D float32 row; npt does not distinguish ranks


@runtime_checkable
class EmbeddingCache(Protocol):
    """A durable per-user cache (``memstrata.store.base.EmbeddingCacheStore``)."""

    def cached_vectors(
        self, scope: Scope, model_id: str, keys: Sequence[str]
    ) -> dict[str, Vector]: ...

    def cache_vectors(self, scope: Scope, model_id: str, vectors: Mapping[str, Vector]) -> None: ...


def cache_key(text: str, *, query: bool) -> str:
    """The cache key of ``text`` embedded as a query or as a passage."""
    digest = content_hash(text)
    return "q:" + digest if query else digest


class LRUEmbeddingCache:
    """A bounded, thread-safe, in-memory map ``(model, key) -> vector``."""

    def __init__(self, max_entries: int = 10_000) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, got {max_entries}")
        self._max = max_entries
        self._data: OrderedDict[tuple[str, str], Vector] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._data)

    def get(self, model_id: str, keys: Sequence[str]) -> dict[str, Vector]:
        found: dict[str, Vector] = {}
        with self._lock:
            for k in keys:
                vec = self._data.get((model_id, k))
                if vec is not None:
                    self._data.move_to_end((model_id, k))
                    found[k] = vec
        return found

    def put(self, model_id: str, vectors: Mapping[str, Vector]) -> None:
        with self._lock:
            for k, vec in vectors.items():
                self._data[(model_id, k)] = vec
                self._data.move_to_end((model_id, k))
            while len(self._data) > self._max:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


class CachedEmbedder:
    """Wraps an embedder so only texts missing from the caches reach it, in one call.

    ``embed_batch`` uses the in-process LRU only; ``for_scope(scope).embed_batch`` also
    uses the durable per-user cache (when one was given).
    """

    def __init__(
        self, inner: Embedder, cache: EmbeddingCache | None = None, *, lru_entries: int = 10_000
    ) -> None:
        self._inner = inner
        # Concurrent callers (hot path, background jobs, other requests) share model calls.
        self._model = CoalescingEmbedder(inner)
        self._durable = cache
        self._lru = LRUEmbeddingCache(lru_entries)

    @property
    def inner(self) -> Embedder:
        return self._inner

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dims(self) -> int:
        return self._inner.dims

    def for_scope(self, scope: Scope) -> ScopedEmbedder:
        """An embedder whose cache entries belong to ``scope``'s tenant and user."""
        return ScopedEmbedder(self, scope)

    def forget(self) -> None:
        """Empty the in-process LRU (after a purge; the durable cache is purged by the
        store)."""
        self._lru.clear()

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        return self._embed(texts, query=query, scope=None)

    def _embed(self, texts: Sequence[str], *, query: bool, scope: Scope | None) -> Matrix:
        items = list(texts)
        dims = self.dims
        if not items:
            return np.zeros((0, dims), dtype=np.float32)
        keys = [cache_key(t, query=query) for t in items]
        unique = list(dict.fromkeys(keys))
        found = self._lru.get(self.model_id, unique)
        durable = self._durable if scope is not None else None
        if durable is not None and scope is not None and len(found) < len(unique):
            stored = durable.cached_vectors(
                scope, self.model_id, [k for k in unique if k not in found]
            )
            if stored:
                self._lru.put(self.model_id, stored)
                found = {**found, **stored}
        missing: dict[str, str] = {}  # key -> first text with that key
        for key, text in zip(keys, items, strict=True):
            if key not in found and key not in missing:
                missing[key] = text
        if missing:
            fresh = self._model.embed_batch(list(missing.values()), query=query)
            fresh = check_vectors(fresh, len(missing), dims, self.model_id)
            new = {key: fresh[i] for i, key in enumerate(missing)}
            if durable is not None and scope is not None:
                durable.cache_vectors(scope, self.model_id, new)
            self._lru.put(self.model_id, new)
            found = {**found, **new}
        rows = [np.asarray(found[key], dtype=np.float32).reshape(-1) for key in keys]
        return check_vectors(np.stack(rows), len(items), dims, self.model_id)


class ScopedEmbedder:
    """:class:`CachedEmbedder` bound to one user's durable cache entries."""

    def __init__(self, parent: CachedEmbedder, scope: Scope) -> None:
        self._parent = parent
        self._scope = scope

    @property
    def model_id(self) -> str:
        return self._parent.model_id

    @property
    def dims(self) -> int:
        return self._parent.dims

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        return self._parent._embed(texts, query=query, scope=self._scope)
