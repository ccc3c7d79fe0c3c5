"""A process opened before a migration cannot search the migrated store with its old model
(store/one_model.py ``ModelPin``). Before, it went on embedding its questions with the old
model: with other dims the dense leg found nothing and only the lexical leg answered; with
the same dims it ranked the new model's vectors by the old model's question, and nothing
said so."""

from __future__ import annotations

import asyncio

import pytest

from memstrata import AsyncMemory, Memory, Scope
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.errors import EmbeddingMismatchError
from memstrata.filters import Filters
from memstrata.store.url import open_store

from .test_one_model import Rotated

ME = Scope("acme", "zoe")
TURNS = [
    "I like green tea in the morning",
    "My sister lives in Oslo",
    "We adopted a grey cat called Miso",
]


def _new(name: str) -> Rotated | str:
    return Rotated() if name == "rotated" else name


@pytest.mark.parametrize("searched_before", [True, False])
@pytest.mark.parametrize("new", ["hashing:512", "rotated"])
def test_a_reader_opened_before_a_migration_is_refused(
    url: str, new: str, searched_before: bool
) -> None:
    old = Memory(url, embedder="hashing", background=False)
    for text in TURNS:
        old.add(ME, text)
    if searched_before:  # its vector cache is loaded and current
        assert old.search(ME, "green tea")[0].record.text == TURNS[0]
    migrated = Memory(url, embedder=_new(new), reembed=True, background=False)
    try:
        with pytest.raises(EmbeddingMismatchError, match="stopped before searching"):
            old.search(ME, "green tea")
        with pytest.raises(EmbeddingMismatchError, match="open the store again"):
            old.build_context(ME, "Where does my sister live?")
        assert migrated.search(ME, "green tea")[0].record.text == TURNS[0]
    finally:
        old.close()
        migrated.close()
    with Memory(url, embedder=_new(new), background=False) as reopened:  # the way out
        assert reopened.search(ME, "grey cat")[0].record.text == TURNS[2]


def test_an_async_reader_is_refused_too(url: str) -> None:
    async def main() -> None:
        old = AsyncMemory(url, embedder="hashing", background=False)
        try:
            await old.add(ME, TURNS[0])
            Memory(url, embedder="hashing:512", reembed=True, background=False).close()
            with pytest.raises(EmbeddingMismatchError, match="hashing-512"):
                await old.search(ME, "green tea")
        finally:
            await old.close()

    asyncio.run(main())


def test_readers_of_the_old_model_search_while_a_migration_runs(url: str) -> None:
    """Until the switch, the store's model is the old one: its readers go on."""
    old = Memory(url, embedder="hashing", background=False)
    new = HashingEmbedder(dims=512)
    try:
        for text in TURNS:
            old.add(ME, text)
        other = Memory(url, embedder="hashing", background=False)  # the migrating process
        other.store.set_meta("reembed_to", f"{new.model_id}\t{new.dims}")  # as reembed sets it
        record = other.list(ME, limit=10)[0]
        other.store.set_vectors([(record, new.embed_batch([record.text])[0])], new.model_id, 512)
        other.close()
        assert old.search(ME, "grey cat")[0].record.text == TURNS[2]
    finally:
        old.close()


def test_a_store_no_memory_opened_checks_nothing(url: str) -> None:
    with Memory(url, embedder="hashing", background=False) as mem:
        mem.add(ME, TURNS[0])
        store = open_store(url)  # a bare store: it never read the model
    Memory(url, embedder="hashing:512", reembed=True, background=False).close()
    try:
        vector = HashingEmbedder(dims=512).embed_batch(["green tea"], query=True)[0]
        assert len(store.vector_search(ME, vector, 5, Filters())) == 1
    finally:
        store.close()


def test_reading_the_stores_model_does_not_pin_a_reader_left_behind(url: str) -> None:
    """``get_meta`` of the model and dims (what the server's ``/readyz`` reads, every few
    seconds behind a load balancer) re-pinned the store object until session 25: the old
    process then searched the new model's vectors with its old model's questions."""
    from memstrata.store import one_model

    old = Memory(url, embedder="hashing", background=False)
    try:
        old.add(ME, TURNS[0])
        Memory(url, embedder=Rotated(), reembed=True, background=False).close()  # same dims
        for key in (one_model.MODEL_KEY, one_model.DIMS_KEY):
            assert old.store.get_meta(key) is not None
        with pytest.raises(EmbeddingMismatchError, match="stopped before searching"):
            old.search(ME, "green tea")
    finally:
        old.close()
