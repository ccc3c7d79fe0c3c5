"""An export with embeddings writes the vectors the store holds (one read a page), not the
embedder's output for every text again: on every store of the ``mem`` fixture.

Before: every text of the user went through ``embed_uncached`` (~20 minutes for 50,000
records with the default embedder), and where the stored vectors differed from what the
model gives today the file's vectors were not the index's."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from legacy_vectors import another_model
from memstrata import Memory, Scope
from memstrata.embedder.base import Matrix
from memstrata.portability import EXPORT_EMBED_BATCH

ALICE = Scope("acme", "alice")


def _vectors_of(text: str) -> dict[str, np.ndarray[Any, Any]]:
    out = {}
    for line in text.splitlines()[1:-1]:
        item = json.loads(line)
        out[item["record"]["id"]] = np.frombuffer(base64.b64decode(item["embedding"]), "<f4")
    return out


class Counted:
    """Wraps the memory's ``embed_uncached``, recording the texts of each call."""

    def __init__(self, mem: Memory) -> None:
        self.calls: list[list[str]] = []
        self._inner = mem._embedder.embed_uncached

    def __call__(self, texts: Sequence[str]) -> Matrix:
        self.calls.append(list(texts))
        return self._inner(texts)


@pytest.fixture
def counted(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> Counted:
    spy = Counted(mem)
    monkeypatch.setattr(mem._embedder, "embed_uncached", spy)
    return spy


def _fill(mem: Memory, n: int) -> list[str]:
    return [mem.add(ALICE, f"note {i} about the garden", dedup=False).id for i in range(n)]


def _export(mem: Memory) -> str:
    buf = io.StringIO()
    mem.export_records(ALICE, buf, include_embeddings=True)
    return buf.getvalue()


def test_the_stored_vectors_are_written_and_nothing_is_embedded(
    mem: Memory, counted: Counted
) -> None:
    ids = _fill(mem, 30)
    # The index's vectors, even where the model would now give another (a stale vector of
    # the same model): the file carries what search uses.
    stale = np.zeros(mem.embedder.dims, np.float32)
    stale[0] = 1.0
    first = mem.store.get_many(ALICE, [ids[0]])[0]
    mem.store.set_vectors([(first, stale)], mem.embedder.model_id, mem.embedder.dims)
    text = _export(mem)
    assert counted.calls == []  # before: one call per 256 texts, 30 texts in all
    in_file = _vectors_of(text)
    stored = mem.store.stored_vectors(ALICE, ids)
    assert in_file.keys() == set(ids) == stored.keys()
    assert all(np.array_equal(in_file[i], stored[i].vector) for i in ids)
    assert np.array_equal(in_file[ids[0]], stale)
    assert json.loads(text.splitlines()[0])["embedding_model"] == mem.embedder.model_id


def test_a_vector_of_another_model_is_embedded_by_the_current_one(
    mem: Memory, counted: Counted
) -> None:
    n = EXPORT_EMBED_BATCH + 20
    ids = _fill(mem, n)
    older = mem.store.get_many(ALICE, ids[: EXPORT_EMBED_BATCH + 5])
    with another_model(mem.store, "older-model", 8):
        mem.store.set_vectors([(r, np.ones(8, np.float32)) for r in older], "older-model", 8)
    in_file = _vectors_of(_export(mem))
    assert sum(len(c) for c in counted.calls) == len(older)
    assert max(len(c) for c in counted.calls) <= EXPORT_EMBED_BATCH
    for rec in older:
        expected = mem.embedder.embed_batch([rec.text])[0]
        np.testing.assert_allclose(in_file[rec.id], expected, rtol=1e-6)
    kept = mem.store.stored_vectors(ALICE, ids[len(older) :])
    assert all(np.array_equal(in_file[i], v.vector) for i, v in kept.items())
    assert len(kept) == n - len(older)


def test_the_file_imports_with_its_vectors(mem: Memory) -> None:
    ids = _fill(mem, 12)
    text = _export(mem)
    report = mem.import_records(io.StringIO(text), into=Scope("acme", "carol"))
    assert (report.imported, report.reembedded) == (12, 0)
    carol = {r.text: r.id for r in mem.list(Scope("acme", "carol"), limit=100)}
    mine = mem.store.stored_vectors(ALICE, ids)
    theirs = mem.store.stored_vectors(Scope("acme", "carol"), list(carol.values()))
    for rec in mem.store.get_many(ALICE, ids):
        assert np.array_equal(theirs[carol[rec.text]].vector, mine[rec.id].vector)
