"""Concurrent embedding calls share one model call, each caller gets exactly its own rows."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata.embedder.base import Matrix
from memstrata.embedder.batching import CoalescingEmbedder
from memstrata.embedder.cache import CachedEmbedder
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.errors import ProviderError


class _Slow:
    """A model whose calls block until released, recording each call's texts and kind."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(64)
        self.calls: list[tuple[list[str], bool]] = []
        self.release = threading.Event()
        self.entered = threading.Event()
        self.fail_on: str | None = None

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dims(self) -> int:
        return self.inner.dims

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        self.calls.append((list(texts), query))
        self.entered.set()
        self.release.wait(5)
        if self.fail_on is not None and self.fail_on in texts:
            raise ProviderError("model failed")
        return self.inner.embed_batch(texts, query=query)


def _run_threads(
    emb: CoalescingEmbedder, jobs: list[tuple[list[str], bool]]
) -> list[Matrix | BaseException]:
    out: list[Matrix | BaseException] = [np.zeros(0, dtype=np.float32)] * len(jobs)

    def call(i: int, texts: list[str], query: bool) -> None:
        try:
            out[i] = emb.embed_batch(texts, query=query)
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            out[i] = exc

    threads = [threading.Thread(target=call, args=(i, t, q)) for i, (t, q) in enumerate(jobs)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(10)
    return out


def test_callers_waiting_on_a_busy_model_share_the_next_call() -> None:
    slow = _Slow()
    emb = CoalescingEmbedder(slow)
    first = threading.Thread(target=emb.embed_batch, args=(["a"],))
    first.start()
    assert slow.entered.wait(5)
    jobs = [([f"t{i}", f"u{i}"], False) for i in range(6)]
    results: list[Matrix | BaseException] = []
    waiter = threading.Thread(target=lambda: results.extend(_run_threads(emb, jobs)))
    waiter.start()
    # Let the six callers queue behind the busy model, then free it.
    for _ in range(200):
        with emb._cv:
            if len(emb._pending) == 6:
                break
        threading.Event().wait(0.01)
    slow.release.set()
    first.join(5)
    waiter.join(10)
    assert len(slow.calls) == 2  # the first call, then all six merged
    assert sorted(slow.calls[1][0]) == sorted(t for ts, _ in jobs for t in ts)
    ref = HashingEmbedder(64)
    for (texts, _), got in zip(jobs, results, strict=True):
        assert isinstance(got, np.ndarray)
        np.testing.assert_allclose(got, ref.embed_batch(texts), rtol=1e-6)
    assert emb.merged == 5


def test_queries_and_passages_are_never_merged() -> None:
    slow = _Slow()
    emb = CoalescingEmbedder(slow)
    first = threading.Thread(target=emb.embed_batch, args=(["a"],))
    first.start()
    assert slow.entered.wait(5)
    jobs = [(["q1"], True), (["p1"], False), (["q2"], True), (["p2"], False)]
    results: list[Matrix | BaseException] = []
    waiter = threading.Thread(target=lambda: results.extend(_run_threads(emb, jobs)))
    waiter.start()
    for _ in range(200):
        with emb._cv:
            if len(emb._pending) == 4:
                break
        threading.Event().wait(0.01)
    slow.release.set()
    first.join(5)
    waiter.join(10)
    for texts, query in slow.calls[1:]:
        assert (
            all(t.startswith("q") for t in texts)
            if query
            else all(t.startswith(("p", "a")) for t in texts)
        )
    ref = HashingEmbedder(64)
    for (texts, query), got in zip(jobs, results, strict=True):
        assert isinstance(got, np.ndarray)
        np.testing.assert_allclose(got, ref.embed_batch(texts, query=query), rtol=1e-6)


def test_a_failing_call_fails_every_request_in_it_and_the_next_caller_goes_on() -> None:
    slow = _Slow()
    slow.fail_on = "bad"
    emb = CoalescingEmbedder(slow)
    first = threading.Thread(target=emb.embed_batch, args=(["a"],))
    first.start()
    assert slow.entered.wait(5)
    jobs = [(["bad"], False), (["fine"], False)]
    results: list[Matrix | BaseException] = []
    waiter = threading.Thread(target=lambda: results.extend(_run_threads(emb, jobs)))
    waiter.start()
    for _ in range(200):
        with emb._cv:
            if len(emb._pending) == 2:
                break
        threading.Event().wait(0.01)
    slow.release.set()
    first.join(5)
    waiter.join(10)
    assert all(isinstance(r, ProviderError) for r in results)  # they shared the failed call
    slow.fail_on = None
    assert emb.embed_batch(["fine"]).shape == (1, 64)  # not stuck afterwards


def test_a_request_larger_than_max_batch_still_runs_alone() -> None:
    emb = CoalescingEmbedder(HashingEmbedder(32), max_batch=4)
    assert emb.embed_batch([f"t{i}" for i in range(10)]).shape == (10, 32)
    assert emb.embed_batch([]).shape == (0, 32)
    with pytest.raises(ValueError, match="max_batch"):
        CoalescingEmbedder(HashingEmbedder(32), max_batch=0)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=5), min_size=1, max_size=8
    )
)
def test_many_threads_get_the_rows_of_their_own_texts(batches: list[list[str]]) -> None:
    emb = CachedEmbedder(HashingEmbedder(32))
    ref = HashingEmbedder(32)
    results = _run_threads(emb._model, [(b, False) for b in batches])  # type: ignore[attr-defined]
    for texts, got in zip(batches, results, strict=True):
        assert isinstance(got, np.ndarray)
        np.testing.assert_allclose(got, ref.embed_batch(texts), rtol=1e-6)
