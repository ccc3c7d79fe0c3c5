"""While a re-embedding runs, a search ranks only the vectors of the store's model.

``reembed`` writes the new model's vectors beside the old one's until it switches the
store's model (store/one_model.py ``reembed_to``). A process opened before the migration
goes on searching with its old model meanwhile (test_one_model_reads.py); at the same dims
its vector load took the new model's vectors too and compared them with its old model's
question, so records ranked by a meaningless score. After the switch, rows an old-model
writer left behind (written after the migration's last pass) were ranked by the new
model's questions the same way. The vector load (SQLite's matrix, PostgreSQL's matrix and
its HNSW query) now takes only the store's model, and the cache is kept per model.

The new model here is the worst a same-dims model can be for the old one's question: every
vector it makes is that question's vector (:class:`Decoy`), so a migrated record that shares
no word with the question scores 1.0 against it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from embedders import Rotated
from memstrata import AsyncMemory, Memory, Scope
from memstrata.embedder.base import Matrix
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.filters import Filters
from memstrata.records import MemoryRecord
from memstrata.reembed import reembed_store
from memstrata.search.hit import SearchHit
from memstrata.store import one_model
from memstrata.store.url import open_store

ME = Scope("acme", "zoe")
QUESTION = "Where does my sister live?"
RIGHT = "My sister lives in Oslo"
# No word in common with the question (or with each other): only the dense leg can find them.
WRONG = [
    "Invoice 4411 was paid by bank transfer",
    "The printer upstairs jams on glossy paper",
    "Quarterly budget spreadsheet attached below",
    "Parking permit renewal falls due Friday",
]


class Decoy:
    """A model of 256 dims whose every vector is ``target``."""

    def __init__(self, target: np.ndarray, model_id: str = "decoy-256") -> None:
        self._target = np.asarray(target, np.float32)
        self._model_id = model_id

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dims(self) -> int:
        return 256

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        return np.ascontiguousarray(np.tile(self._target, (len(texts), 1)))


class AsyncDecoy(Decoy):
    async def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:  # type: ignore[override]
        return super().embed_batch(texts, query=query)


class _Stopped(Exception):
    """Raised after reembed's first batch: the migration stops half way, as if killed."""


def _stop(_: int) -> None:
    raise _Stopped


def _question() -> np.ndarray:
    vector: np.ndarray = HashingEmbedder().embed_batch([QUESTION], query=True)[0]
    return vector


def _models(records: list[MemoryRecord]) -> dict[str, str | None]:
    return {r.text: r.embedding_model for r in records}


def _halfway(url: str) -> None:
    """Another process re-embeds the store to a same-dims model and is stopped after its
    first batch (the wrong records, stored first): ``reembed_to`` stays set, the store's
    model is still the old one, and the wrong records hold the new model's vectors."""
    with Memory(url, embedder="hashing", background=False) as other:
        with pytest.raises(_Stopped):
            reembed_store(other.store, Decoy(_question()), batch_size=len(WRONG), on_batch=_stop)
        assert other.store.get_meta(one_model.NEXT_KEY) == "decoy-256\t256"
        models = _models(other.list(ME, limit=100))
    assert models == {**dict.fromkeys(WRONG, "decoy-256"), RIGHT: "hashing-256"}


def _texts_of(hits: list[SearchHit]) -> list[str]:
    return [h.record.text for h in hits]


@pytest.mark.parametrize("cache", ["loaded before", "loaded during"])
def test_a_reader_of_the_old_model_ranks_only_its_vectors_mid_migration(
    url: str, cache: str
) -> None:
    old = Memory(url, embedder="hashing", background=False)
    try:
        for text in [*WRONG, RIGHT]:
            old.add(ME, text)
        right_id = next(r.id for r in old.list(ME, limit=100) if r.text == RIGHT)
        if cache == "loaded before":
            assert _texts_of(old.search(ME, QUESTION))[0] == RIGHT
        _halfway(url)
        found = _texts_of(old.search(ME, QUESTION))
        assert found[0] == RIGHT
        assert not set(WRONG) & set(found), found
        context = old.build_context(ME, QUESTION).text
        assert RIGHT in context
        assert not [w for w in WRONG if w in context], context
        dense = old.store.vector_search(ME, _question(), 10, Filters())
        assert [c.id for c in dense] == [right_id]
        # the old model's writer goes on: its new record is searched with the rest
        old.add(ME, "My sister moved to Bergen")
        assert "My sister moved to Bergen" in _texts_of(old.search(ME, QUESTION))
        assert len(old.store.vector_search(ME, _question(), 10, Filters())) == 2
    finally:
        old.close()


@pytest.mark.parametrize("cache", ["loaded before", "loaded during"])
def test_an_async_reader_of_the_old_model_ranks_only_its_vectors(url: str, cache: str) -> None:
    from memstrata._async.reembed import reembed_store as areembed_store

    async def main() -> None:
        old = AsyncMemory(url, embedder="hashing", background=False)
        try:
            for text in [*WRONG, RIGHT]:
                await old.add(ME, text)
            if cache == "loaded before":
                assert _texts_of(await old.search(ME, QUESTION))[0] == RIGHT
            async with AsyncMemory(url, embedder="hashing", background=False) as other:
                with pytest.raises(_Stopped):
                    await areembed_store(
                        other.store,
                        AsyncDecoy(_question()),
                        batch_size=len(WRONG),
                        on_batch=_stop,
                    )
            found = _texts_of(await old.search(ME, QUESTION))
            assert found[0] == RIGHT
            assert not set(WRONG) & set(found), found
            context = (await old.build_context(ME, QUESTION)).text
            assert not [w for w in WRONG if w in context], context
            assert len(await old.store.vector_search(ME, _question(), 10, Filters())) == 1
        finally:
            await old.close()

    asyncio.run(main())


def _rotated_question() -> np.ndarray:
    return np.ascontiguousarray(_question()[::-1])


def test_the_new_models_readers_ignore_old_vectors_left_behind(url: str) -> None:
    """A writer still on the old model adds a record after the migration's last pass and
    before its switch (the store takes it: ``reembed_to`` is set): after the switch that
    row is of the old model. Its vector here is the new model's question's, at 1.0."""
    old_model = Decoy(_rotated_question(), "decoy-256")
    old = Memory(url, embedder=old_model, background=False)
    bare = open_store(url)  # a store object no Memory opened: it follows the store's model
    try:
        old.add(ME, RIGHT)
        with Memory(url, embedder=old_model, background=False) as migrating:
            assert reembed_store(migrating.store, Rotated()) == 1  # every pass done
            old.add(ME, WRONG[0])  # after the last pass, before the switch
            # the bare store's cache is loaded while the migration runs
            assert len(bare.vector_search(ME, _rotated_question(), 10, Filters())) >= 1
            # the switch, as reembed.migrate_model makes it
            migrating.store.set_meta(one_model.DIMS_KEY, "256")
            migrating.store.set_meta(one_model.MODEL_KEY, "rotated-256")
            migrating.store.set_meta(one_model.NEXT_KEY, "")
        right_id = next(r.id for r in old.list(ME, limit=10) if r.text == RIGHT)
        assert _models(old.list(ME, limit=10)) == {RIGHT: "rotated-256", WRONG[0]: "decoy-256"}
        with Memory(url, embedder=Rotated(), background=False) as new:
            found = _texts_of(new.search(ME, QUESTION))
            assert found[0] == RIGHT
            assert WRONG[0] not in found, found
            assert WRONG[0] not in new.build_context(ME, QUESTION).text
        # the cache it loaded during the migration (of the old model) is not served now
        dense = bare.vector_search(ME, _rotated_question(), 10, Filters())
        assert [c.id for c in dense] == [right_id]
    finally:
        old.close()
        bare.close()


def test_a_row_reloaded_as_another_models_removes_its_records_copy() -> None:
    """The cache's load gives a row of another model without its vector (sqlite/vectors.py
    ``_LOAD``): the record's copy it held is dead in the new state, the old state is kept
    as it was (a search on another thread may hold it), and a later row of the store's
    model brings the record back."""
    from memstrata.store.sqlite.vectors import UserVectors

    def row(rev: int, rid: str, vector: bytes | None) -> tuple[object, ...]:
        return (rev, rid, "note", None, None, "shared", "active", False, 0.5, vector, rev)

    one = np.ones(4, "<f4").tobytes()
    first = UserVectors(dims=4).extended([row(1, "a", one), row(2, "b", one)], 2)
    assert (first.count, first.live.tolist()) == (2, [True, True])
    moved = first.extended([row(3, "a", None)], 3)
    assert (moved.count, moved.last_rev, moved.live.tolist()) == (1, 3, [False, True])
    assert first.live.tolist() == [True, True]
    back = moved.extended([row(4, "a", one), row(5, "c", None)], 5)
    assert back.count == 2
    assert sorted(back.ids[i] for i in np.flatnonzero(back.live)) == ["a", "b"]
    fresh = UserVectors(dims=4).extended([row(1, "a", None)], 1)
    assert (fresh.count, fresh.last_rev) == (0, 1)


def test_a_migration_to_other_dims_is_not_compared_either(url: str) -> None:
    """Guard (passed before too): at other dims the load never took the new model's rows;
    the old model's reader finds the records not migrated yet by meaning, the others by
    their words only, and nothing fails."""
    old = Memory(url, embedder="hashing", background=False)
    try:
        for text in [*WRONG, RIGHT]:
            old.add(ME, text)
        with (
            Memory(url, embedder="hashing", background=False) as other,
            pytest.raises(_Stopped),
        ):
            reembed_store(other.store, HashingEmbedder(512), batch_size=len(WRONG), on_batch=_stop)
        assert _texts_of(old.search(ME, QUESTION))[0] == RIGHT
        assert len(old.store.vector_search(ME, _question(), 10, Filters())) == 1
        assert _texts_of(old.search(ME, "invoice bank transfer"))[0] == WRONG[0]
    finally:
        old.close()


@pytest.mark.parametrize("cache", ["loaded before", "loaded during"])
def test_an_in_process_store_ranks_only_its_models_vectors(cache: str) -> None:
    """``memory://`` holds one process's records: a re-embedding there that stops half way
    (its new embedder failed on a batch) leaves the same Memory searching two models'
    vectors, as above."""
    with Memory("memory://", embedder="hashing", background=False) as mem:
        for text in [*WRONG, RIGHT]:
            mem.add(ME, text)
        if cache == "loaded before":
            assert _texts_of(mem.search(ME, QUESTION))[0] == RIGHT
        with pytest.raises(_Stopped):
            reembed_store(mem.store, Decoy(_question()), batch_size=len(WRONG), on_batch=_stop)
        found = _texts_of(mem.search(ME, QUESTION))
        assert found[0] == RIGHT
        assert not set(WRONG) & set(found), found
        assert len(mem.store.vector_search(ME, _question(), 10, Filters())) == 1
        # the switch (as reembed.migrate_model makes it): now only the moved vectors count
        mem.store.set_meta(one_model.MODEL_KEY, "decoy-256")
        assert len(mem.store.vector_search(ME, _question(), 10, Filters())) == len(WRONG)
