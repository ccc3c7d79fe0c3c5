"""Content-hash embedding cache: unchanged text is never embedded twice.

Two levels:

- a durable, per-user cache of passages: any object with ``cached_vectors(scope, model,
  keys)`` and ``cache_vectors(scope, model, vectors)`` (every ``Store`` has both). Entries
  are keyed by tenant, user, model and text hash, so a user's purge deletes them.
  :meth:`AsyncCachedEmbedder.for_scope` gives an embedder that reads and writes it. Search
  queries never reach it: a read writes nothing to the store, the table does not grow with
  every new question a user asks, and no vector of a question outlives the process (a
  repeated question within one is found in the LRU; a new one costs one embedding, which a
  miss in the durable cache cost anyway, after a read);
- a bounded in-process LRU keyed by model, reader and text hash, shared by every call of
  one :class:`AsyncCachedEmbedder`. It never reaches disk;
  :meth:`AsyncCachedEmbedder.forget` empties it (``Memory.purge`` does), so a purged user's
  texts do not linger in it either.

Each user's entries are their own (session 28): a scoped call reads and fills the entries of
the one who asks (``(tenant, caller or user)``), an unscoped call (a background pass) those
of no one. Until then the LRU was keyed by text only: a user timing a search learnt whether
anyone in the process had asked the same question (~10 ms of embedding against ~0.1), and a
caller (another user reading what the owner shared) whether the owner had. A caller's calls
never reach the durable cache either (it is the owner's: a caller's search wrote the owner's
table, and its timing told which of the owner's texts were cached).

``cache_key`` and ``LRUEmbeddingCache`` are pure values of ``embedder.cache_types``,
re-exported here.

Keys are ``content_hash(text)`` for passages and ``"q:" + content_hash(text)`` for queries:
asymmetric models embed the two differently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from memstrata._async.embedder.base import AsyncEmbedder, Matrix, check_vectors
from memstrata._async.embedder.batching import AsyncCoalescingEmbedder
from memstrata.embedder.cache_types import LRUEmbeddingCache, Reader, Vector, cache_key
from memstrata.scope import Scope
from memstrata.traces import keeps_words_of

__all__ = [
    "AsyncCachedEmbedder",
    "AsyncEmbeddingCache",
    "AsyncScopedEmbedder",
    "LRUEmbeddingCache",
    "cache_key",
]


@runtime_checkable
class AsyncEmbeddingCache(Protocol):
    """A durable per-user cache (``memstrata._async.store.base.AsyncEmbeddingCacheStore``)."""

    async def cached_vectors(
        self, scope: Scope, model_id: str, keys: Sequence[str]
    ) -> dict[str, Vector]: ...

    async def cache_vectors(
        self, scope: Scope, model_id: str, vectors: Mapping[str, Vector]
    ) -> None: ...


class AsyncCachedEmbedder:
    """Wraps an embedder so only texts missing from the caches reach it, in one call.

    ``embed_batch`` uses the in-process LRU only (the entries of no one);
    ``for_scope(scope).embed_batch`` the LRU entries of the one who asks and, for the
    owner's passages, the durable per-user cache (when one was given); never for queries
    nor for a caller.
    """

    def __init__(
        self,
        inner: AsyncEmbedder,
        cache: AsyncEmbeddingCache | None = None,
        *,
        lru_entries: int = 10_000,
    ) -> None:
        self._inner = inner
        # Concurrent callers (hot path, background jobs, other requests) share model calls.
        self._model = AsyncCoalescingEmbedder(inner)
        self._durable = cache
        self._lru = LRUEmbeddingCache(lru_entries)
        keeps_words_of(self)  # a purge anywhere empties the LRU (memstrata.traces)

    @property
    def inner(self) -> AsyncEmbedder:
        return self._inner

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dims(self) -> int:
        return self._inner.dims

    def for_scope(self, scope: Scope) -> AsyncScopedEmbedder:
        """An embedder whose cache entries are those of ``scope``'s reader (its caller, or its
        user; a caller's never reach the durable cache)."""
        return AsyncScopedEmbedder(self, scope)

    def forget(self) -> None:
        """Empty the in-process LRU (after a purge, :func:`memstrata.traces.forget_words`;
        the durable cache is purged by the store)."""
        self._lru.clear()

    async def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        return await self._embed(texts, query=query, scope=None)

    async def embed_uncached(self, texts: Sequence[str]) -> Matrix:
        """Passages embedded by the model (through the coalescer, so queries still go first)
        without reading or filling either cache: for a walk over many stored texts (an
        export), which would otherwise evict what searches use and write to the store."""
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        fresh = await self._model.embed_batch(list(texts), query=False)
        return check_vectors(fresh, len(texts), self.dims, self.model_id)

    async def _embed(self, texts: Sequence[str], *, query: bool, scope: Scope | None) -> Matrix:
        items = list(texts)
        dims = self.dims
        if not items:
            return np.zeros((0, dims), dtype=np.float32)
        keys = [cache_key(t, query=query) for t in items]
        unique = list(dict.fromkeys(keys))
        reader: Reader = "" if scope is None else (scope.tenant, scope.caller or scope.user)
        found = self._lru.get(self.model_id, unique, reader)
        owner = scope is not None and scope.caller is None
        durable = self._durable if owner and not query else None
        if durable is not None and scope is not None and len(found) < len(unique):
            stored = await durable.cached_vectors(
                scope, self.model_id, [k for k in unique if k not in found]
            )
            if stored:
                self._lru.put(self.model_id, stored, reader)
                found = {**found, **stored}
        missing: dict[str, str] = {}  # key -> first text with that key
        for key, text in zip(keys, items, strict=True):
            if key not in found and key not in missing:
                missing[key] = text
        if missing:
            fresh = await self._model.embed_batch(list(missing.values()), query=query)
            fresh = check_vectors(fresh, len(missing), dims, self.model_id)
            new = {key: fresh[i] for i, key in enumerate(missing)}
            if durable is not None and scope is not None:
                await durable.cache_vectors(scope, self.model_id, new)
            self._lru.put(self.model_id, new, reader)
            found = {**found, **new}
        rows = [np.asarray(found[key], dtype=np.float32).reshape(-1) for key in keys]
        return check_vectors(np.stack(rows), len(items), dims, self.model_id)


class AsyncScopedEmbedder:
    """:class:`AsyncCachedEmbedder` bound to the cache entries of the one ``scope`` names
    (its caller, or its user)."""

    def __init__(self, parent: AsyncCachedEmbedder, scope: Scope) -> None:
        self._parent = parent
        self._scope = scope

    @property
    def model_id(self) -> str:
        return self._parent.model_id

    @property
    def dims(self) -> int:
        return self._parent.dims

    async def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        return await self._parent._embed(texts, query=query, scope=self._scope)
