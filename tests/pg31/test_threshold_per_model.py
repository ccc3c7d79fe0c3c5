"""PostgreSQL picks the exact scan or the HNSW index by the store's model's vector count.

A user with fewer than ``exact_below`` vectors is searched exactly (the in-process matrix),
a larger one through their pgvector HNSW index (store/postgres/vectors.py). While a
re-embedding runs the table holds both models' rows (one per record: a re-embedded record's
row holds the new model's vector), and a search compares only the store's model's. The
count that picked the path was of every model's rows (vec27): a store half re-embedded, with
few rows left of its model, searched those through HNSW, walking past the other model's rows
(an iterative scan filtering them out) instead of scoring its few rows exactly; after the
switch the new model's few rows were searched the same way because of the old rows left.

Which path ran is seen in the process's vector cache: the exact path loads the user's
matrix (one user held), the HNSW path loads nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from embedders import Rotated
from memstrata import Memory, Scope
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.filters import Filters
from memstrata.reembed import reembed_store
from memstrata.store import one_model
from memstrata.store.url import open_store

ME = Scope("acme", "zoe")
TEXTS = [f"note {i} about the garden shed and its {w}" for i, w in enumerate("abcdefgh")]
MIGRATED = 6  # re-embedded before the migration stops: 2 rows of the old model left


class _Stopped(Exception):
    pass


def _stop(_: int) -> None:
    raise _Stopped


@pytest.fixture
def url(pg_server: object) -> Iterator[str]:
    schema = "t_" + uuid.uuid4().hex[:16]
    # 8 rows in all: every model's count is past the threshold, neither model's own is
    yield pg_server.url(schema, exact_below=7)  # type: ignore[attr-defined]
    pg_server.drop(schema)  # type: ignore[attr-defined]


def _halfway(url: str) -> None:
    with Memory(url, embedder="hashing", background=False) as mem:
        for text in TEXTS:
            mem.add(ME, text)
        with pytest.raises(_Stopped):
            reembed_store(mem.store, Rotated(), batch_size=MIGRATED, on_batch=_stop)
        models = [r.embedding_model for r in mem.list(ME, limit=100)]
    assert sorted(models, key=str) == ["hashing-256"] * 2 + ["rotated-256"] * MIGRATED


@pytest.mark.parametrize("side", ["old model, mid-migration", "new model, after the switch"])
def test_a_model_with_few_rows_is_searched_exactly(url: str, side: str) -> None:
    _halfway(url)
    embedder = HashingEmbedder()
    if side == "new model, after the switch":  # switched with the old model's rows left
        switching = open_store(url)  # as reembed.migrate_model switches
        try:
            switching.set_meta(one_model.DIMS_KEY, "256")
            switching.set_meta(one_model.MODEL_KEY, "rotated-256")
            switching.set_meta(one_model.NEXT_KEY, "")
        finally:
            switching.close()
        embedder = Rotated()  # type: ignore[assignment]
        mine = MIGRATED
    else:
        mine = len(TEXTS) - MIGRATED
    store = open_store(url)  # follows the store's model
    try:
        query = embedder.embed_batch(["the garden shed"], query=True)[0]
        found = store.vector_search(ME, query, 10, Filters())
        assert len(found) == mine
        assert len(store._vectors) == 1, "searched through HNSW, not exactly"  # type: ignore[attr-defined]
        assert not store._hnsw_users  # type: ignore[attr-defined]
        if side == "new model, after the switch":
            # the rest re-embedded: 8 rows of the store's model now, past exact_below; the
            # model's count remembered from the last search is read again (a newer vseq)
            with Memory(url, embedder=Rotated(), background=False) as mem:
                assert reembed_store(mem.store, Rotated()) == len(TEXTS) - MIGRATED
            assert len(store.vector_search(ME, query, 10, Filters())) == len(TEXTS)
            assert list(store._hnsw_users) == [("acme", "zoe", 256)]  # type: ignore[attr-defined]
    finally:
        store.close()


def test_a_model_past_the_threshold_still_uses_hnsw(url: str) -> None:
    """The other side: 8 rows of one model (nothing migrated) go through the index."""
    with Memory(url, embedder="hashing", background=False) as mem:
        for text in TEXTS:
            mem.add(ME, text)
    store = open_store(url)
    try:
        query = HashingEmbedder().embed_batch(["the garden shed"], query=True)[0]
        assert len(store.vector_search(ME, query, 10, Filters())) == len(TEXTS)
        assert len(store._vectors) == 0  # type: ignore[attr-defined]
    finally:
        store.close()
