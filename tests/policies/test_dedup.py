"""Dedup before insert: exact hash, then the same statement at cosine >= the embedder's
merge threshold (0.95 for unknown embedders) within the type, merging provenance; a close
cosine with other words is linked, never merged."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

import numpy as np
import pytest

from memstrata.clock import FixedClock
from memstrata.embedder.base import Matrix
from memstrata.filters import Filters
from memstrata.layers.base import LayerConfig, LayerContext
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.policies.dedup import DedupAction, Thresholds, decide, insert_or_merge
from memstrata.records import MemoryRecord, RecordType
from memstrata.scope import Scope
from memstrata.store import open_store
from memstrata.writes import note_record

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ALICE = Scope("acme", "alice")


def at_cosine(c: float) -> list[float]:
    """A unit vector whose cosine with (1, 0, 0, 0) is exactly ``c``."""
    return [c, math.sqrt(1 - c * c), 0.0, 0.0]


class TableEmbedder:
    """A real Embedder: fixed vectors for known texts, an orthogonal one for anything else."""

    model_id = "table-4"
    dims = 4

    def __init__(self, table: dict[str, list[float]]) -> None:
        self._table = table

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        rows = [self._table.get(t, [0.0, 0.0, 0.0, 1.0]) for t in texts]
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dims)


@pytest.fixture(params=["sqlite", "memory"])
def ctx(request: pytest.FixtureRequest) -> Iterator[LayerContext]:
    store = open_store("sqlite://:memory:" if request.param == "sqlite" else "memory://")
    table = {
        "base": [1.0, 0.0, 0.0, 0.0],
        "near": at_cosine(0.951),
        "Base.": at_cosine(0.951),
        "BASE!": at_cosine(0.94),
    }
    yield LayerContext(store, TableEmbedder(table), HeuristicLLM(), FixedClock(T0), LayerConfig())
    store.close()


def rec(
    ctx: LayerContext,
    text: str,
    source: str,
    type: RecordType = RecordType.NOTE,
    tags: Sequence[str] = (),
) -> MemoryRecord:
    return note_record(
        ALICE,
        text,
        type=type,
        now=T0,
        model_id="table-4",
        dims=4,
        max_chars=1000,
        importance=0.5,
        source_ids=[source],
        tags=tags,
    )


def test_decide() -> None:
    t = Thresholds(merge=0.95, related=0.9)
    assert (
        decide(exact_match=True, same=True, similarity=None, thresholds=t)
        is DedupAction.MERGE_EXACT
    )
    assert (
        decide(exact_match=False, same=True, similarity=0.95, thresholds=t)
        is DedupAction.MERGE_NEAR
    )
    assert (
        decide(exact_match=False, same=True, similarity=0.9499, thresholds=t) is DedupAction.INSERT
    )
    assert (
        decide(exact_match=False, same=False, similarity=0.999, thresholds=t) is DedupAction.INSERT
    )
    assert decide(exact_match=False, same=True, similarity=None, thresholds=t) is DedupAction.INSERT


def _count(ctx: LayerContext) -> int:
    return ctx.store.count(ALICE, Filters())


def test_exact_duplicate_merges_provenance(ctx: LayerContext) -> None:
    first = insert_or_merge(ctx, ALICE, rec(ctx, "base", "m1", tags=["a"]))
    again = insert_or_merge(ctx, ALICE, rec(ctx, " base ", "m2", tags=["b"]))
    assert (first.action, again.action) == (DedupAction.INSERT, DedupAction.MERGE_EXACT)
    assert _count(ctx) == 1
    stored = ctx.store.get(ALICE, first.record.id)
    assert stored.version == 2 and stored.metadata["mentions"] == 2
    assert stored.source_ids == ("m1", "m2") and stored.tags == ("a", "b")


def test_same_statement_at_0_95_merges_but_0_94_does_not(ctx: LayerContext) -> None:
    base = insert_or_merge(ctx, ALICE, rec(ctx, "base", "m1"))
    near = insert_or_merge(ctx, ALICE, rec(ctx, "Base.", "m2"))
    assert near.action is DedupAction.MERGE_NEAR and near.record.id == base.record.id
    assert near.similarity == pytest.approx(0.951, abs=1e-5)
    far = insert_or_merge(ctx, ALICE, rec(ctx, "BASE!", "m3"))
    assert far.action is DedupAction.INSERT and far.similarity == pytest.approx(0.94, abs=1e-5)
    assert _count(ctx) == 2
    stored = ctx.store.get(ALICE, base.record.id)
    assert stored.source_ids == ("m1", "m2") and stored.metadata["merged_texts"] == ["Base."]


def test_a_close_cosine_with_other_words_is_linked_not_merged(ctx: LayerContext) -> None:
    base = insert_or_merge(ctx, ALICE, rec(ctx, "base", "m1"))
    near = insert_or_merge(ctx, ALICE, rec(ctx, "near", "m2"))
    assert near.action is DedupAction.INSERT and near.record.id != base.record.id
    assert near.related == (base.record.id,)
    assert [(r.kind, r.target_id) for r in near.record.relations] == [
        ("similar_to", base.record.id)
    ]
    assert ctx.store.get(ALICE, base.record.id).version == 1
    assert _count(ctx) == 2


def test_near_duplicates_only_within_the_same_type(ctx: LayerContext) -> None:
    insert_or_merge(ctx, ALICE, rec(ctx, "base", "m1"))
    other = insert_or_merge(ctx, ALICE, rec(ctx, "Base.", "m2", type=RecordType.FACT))
    exact = insert_or_merge(ctx, ALICE, rec(ctx, "Base.", "m3", type=RecordType.FACT))
    assert other.action is DedupAction.INSERT
    assert exact.action is DedupAction.MERGE_EXACT
    assert _count(ctx) == 2
