"""Embed a search query on a thread while the CLI imports the library and opens the store.

`memstrata search` spends ~0.1 s importing the store and search modules and opening the
store (Python, on the main thread), and ~0.035 s loading the default model and embedding the
query (C code that releases the GIL). Started as soon as the embedder exists, the embedding
overlaps the rest instead of following it: same vector, computed by the same embedder call,
less wall time on a machine with a second core.

:class:`QueryPrefetch` is an :class:`~memstrata.embedder.base.Embedder`: a call for exactly
that query (``query=True``) gets the vector computed on the thread; any other call, or that
one if the thread failed, goes to the wrapped embedder, so errors surface where they always
did.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..embedder.base import Embedder, Matrix

__all__ = ["QueryPrefetch"]


class QueryPrefetch:
    """``inner`` with ``inner.embed_batch([query], query=True)`` already running."""

    def __init__(self, inner: Embedder, query: str) -> None:
        self._inner = inner
        self._query = query
        self._result: Matrix | None = None
        self._lock = threading.Lock()
        self._used = False
        self._thread = threading.Thread(target=self._run, name="memstrata-query-embed")
        self._thread.start()

    def _run(self) -> None:
        try:
            self._result = self._inner.embed_batch([self._query], query=True)
        except BaseException:  # the main thread's own call raises it where it always did
            self._result = None

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
        if query and items == [self._query]:
            with self._lock:
                first, self._used = not self._used, True
            if first:
                self._thread.join()
                if self._result is not None:
                    return self._result.copy()
        return self._inner.embed_batch(items, query=query)

    def close(self) -> None:
        """Wait for the thread (a search that never needed the vector: lexical mode, a
        cached query, an error before the search)."""
        self._thread.join()
