"""The pure values of the embedding cache (one class for the sync and the async tree).

:func:`cache_key` names a text's entry; :class:`LRUEmbeddingCache` is the bounded in-process
level shared by every call of one ``CachedEmbedder`` (sync) or ``AsyncCachedEmbedder``. Both
are re-exported by ``memstrata.embedder.cache``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence

from ..errors import ValidationError
from ..text import content_hash
from .checks import Matrix

__all__ = ["LRUEmbeddingCache", "Reader", "Vector", "cache_key"]

Vector = Matrix  # a 1-D float32 row; npt does not distinguish ranks
Reader = str | tuple[str, str]  # whose entries: "" (no one's) or (tenant, user)


def cache_key(text: str, *, query: bool) -> str:
    """The cache key of ``text`` embedded as a query or as a passage."""
    digest = content_hash(text)
    return "q:" + digest if query else digest


class LRUEmbeddingCache:
    """A bounded, thread-safe, in-memory map ``(model, reader, key) -> vector``.

    ``reader`` names whose entries these are (``""``: no one's): an entry is found only by
    the reader that put it, so a user cannot time whether another embedded a text (asked a
    question, stored a passage). Its lock is held only while the map changes (never across
    I/O), so event-loop code may use it as it is."""

    def __init__(self, max_entries: int = 10_000) -> None:
        if max_entries < 1:
            raise ValidationError(f"max_entries must be at least 1, got {max_entries}")
        self._max = max_entries
        self._data: OrderedDict[tuple[str, Reader, str], Vector] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._data)

    def get(self, model_id: str, keys: Sequence[str], reader: Reader = "") -> dict[str, Vector]:
        found: dict[str, Vector] = {}
        with self._lock:
            for k in keys:
                vec = self._data.get((model_id, reader, k))
                if vec is not None:
                    self._data.move_to_end((model_id, reader, k))
                    found[k] = vec
        return found

    def put(self, model_id: str, vectors: Mapping[str, Vector], reader: Reader = "") -> None:
        with self._lock:
            for k, vec in vectors.items():
                self._data[(model_id, reader, k)] = vec
                self._data.move_to_end((model_id, reader, k))
            while len(self._data) > self._max:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
