"""`memstrata search` embeds its query on a thread (cli/prefetch.py): same results, one
model call, errors where they always were."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memstrata import Memory, Scope
from memstrata.cli.prefetch import QueryPrefetch
from memstrata.embedder.factory import make_embedder
from memstrata.errors import ProviderError


class Recording:
    """The hashing embedder, recording each call and the thread it ran on."""

    def __init__(self, fail: bool = False) -> None:
        self._inner = make_embedder("hashing")
        self.calls: list[tuple[list[str], bool, str]] = []
        self.fail = fail

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dims(self) -> int:
        return self._inner.dims

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        self.calls.append((list(texts), query, threading.current_thread().name))
        if self.fail:
            raise ProviderError("the model is gone")
        return self._inner.embed_batch(texts, query=query)


def _store(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'p.db'}"
    with Memory(url, embedder="hashing", background=False) as mem:
        scope = Scope("t", "u")
        for text in ("peanut allergy", "trip to Lisbon in May", "bees in the garden"):
            mem.add(scope, text)
    return url


def _hits(mem: Memory, query: str) -> list[tuple[str, float, float]]:
    hits = mem.search(Scope("t", "u"), query, 5, explain=True)
    return [(h.record.id, h.score, (h.explanation or {})["dense_cosine"]) for h in hits]


def test_the_prefetched_vector_is_the_one_the_search_uses(tmp_path: Path) -> None:
    url = _store(tmp_path)
    with Memory(url, embedder="hashing", background=False) as plain:
        expected = _hits(plain, "where is the trip?")
    inner = Recording()
    prefetch = QueryPrefetch(inner, "where is the trip?")
    with Memory(url, embedder=prefetch, background=False) as mem:
        assert _hits(mem, "where is the trip?") == expected
        assert mem.embedder.model_id == inner.model_id
    prefetch.close()
    # one model call for the query, made on the prefetch thread
    assert inner.calls == [(["where is the trip?"], True, "memstrata-query-embed")]


def test_other_calls_go_to_the_wrapped_embedder(tmp_path: Path) -> None:
    inner = Recording()
    prefetch = QueryPrefetch(inner, "q")
    a = prefetch.embed_batch(["q"], query=False)  # a passage, not the query
    b = prefetch.embed_batch(["other"], query=True)
    c = prefetch.embed_batch(["q"], query=True)  # the prefetched one
    d = prefetch.embed_batch(["q"], query=True)  # asked again: computed again
    prefetch.close()
    assert np.array_equal(c, d) and c.shape == (1, inner.dims) and a.shape == b.shape
    main = threading.current_thread().name
    assert sorted(inner.calls, key=str) == sorted(
        [
            (["q"], True, "memstrata-query-embed"),
            (["q"], False, main),
            (["other"], True, main),
            (["q"], True, main),
        ],
        key=str,
    )


def test_a_failing_embedder_fails_the_search_as_before(tmp_path: Path) -> None:
    url = _store(tmp_path)
    inner = Recording()
    prefetch = QueryPrefetch(inner, "peanut")
    with Memory(url, embedder=prefetch, background=False) as mem:
        prefetch.close()
        inner.fail = True  # the thread's call succeeded; a later search fails as before
        with pytest.raises(ProviderError):
            mem.search(Scope("t", "u"), "a new query")
    failing = Recording(fail=True)
    prefetch = QueryPrefetch(failing, "peanut")
    prefetch.close()
    with pytest.raises(ProviderError, match="the model is gone"):
        prefetch.embed_batch(["peanut"], query=True)  # raised on the caller's thread
    assert [c[2] for c in failing.calls] == ["memstrata-query-embed", "MainThread"]
