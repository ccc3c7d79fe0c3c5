"""The store's embedding model is guarded; broken provider output never reaches the store."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memstrata import EmbeddingMismatchError, Memory, ProviderError, Scope
from memstrata.embedder.base import Matrix
from memstrata.embedder.hashing import HashingEmbedder


class BrokenEmbedder:
    """A real Embedder whose output is wrong in a chosen way."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    @property
    def model_id(self) -> str:
        return "hashing-256"

    @property
    def dims(self) -> int:
        return 256

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        out = np.ones((len(texts), 256), dtype=np.float32)
        if self.kind == "nan":
            out[0, 0] = np.nan
        elif self.kind == "inf":
            out[-1, 3] = np.inf
        elif self.kind == "dims":
            out = np.ones((len(texts), 128), dtype=np.float32)
        elif self.kind == "count":
            out = out[:-1]
        return out


@pytest.mark.parametrize("kind", ["nan", "inf", "dims", "count"])
def test_bad_vectors_are_refused_and_nothing_is_written(tmp_path: Path, kind: str) -> None:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    scope = Scope("t", "u", session="s")
    with Memory(url, embedder="hashing") as good:
        good.add_message(scope, "user", "kept safe")
    with Memory(url, embedder=BrokenEmbedder(kind)) as bad:
        with pytest.raises(ProviderError):
            bad.add_message(scope, "user", "never stored")
        assert [r.text for r in bad.list(scope)] == ["kept safe"]


def test_other_model_is_refused_then_reembed_migrates(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    scope = Scope("t", "u")
    with Memory(url, embedder="hashing") as m:
        rec = m.add(scope, "the violin lesson is on Tuesday", type="note")
    with pytest.raises(EmbeddingMismatchError, match="reembed"):
        Memory(url, embedder=HashingEmbedder(dims=64))
    with Memory(url, embedder=HashingEmbedder(dims=64), reembed=True) as m:
        assert m.stats(scope)["embedding_dims"] == 64
        hits = m.search(scope, "violin lesson", mode="dense", top_k=1)
        assert hits[0].id == rec.id
    with Memory(url, embedder=HashingEmbedder(dims=64)) as m:  # now the store's model
        assert m.get(scope, rec.id).text.startswith("the violin")
