"""A process opened before a migration cannot write vectors of its old model into the
migrated store (store/one_model.py). Before, it went on writing them: the new model's
queries never found those records by meaning (other dims), or found them wrongly (same
dims, another model), and nothing said so."""

from __future__ import annotations

import asyncio

import pytest

from embedders import Rotated
from memstrata import AsyncMemory, Memory, Scope
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.errors import EmbeddingMismatchError

ME = Scope("acme", "zoe")


def _texts(mem: Memory) -> set[str]:
    return {r.text for r in mem.list(ME, limit=1000)}


@pytest.mark.parametrize("new", ["hashing:512", "rotated"])
def test_a_writer_opened_before_a_migration_is_refused(url: str, new: str) -> None:
    old = Memory(url, embedder="hashing", background=False)
    old.add(ME, "I like green tea in the morning")
    migrated = Memory(url, embedder=Rotated() if new == "rotated" else new, reembed=True)
    try:
        # its dedup search is refused before its write (test_one_model_reads.py)
        with pytest.raises(EmbeddingMismatchError, match="migrated it"):
            old.add(ME, "My sister lives in Oslo")
        with pytest.raises(EmbeddingMismatchError):
            old.add_messages(
                ME, [{"role": "user", "content": f"turn {i} about the garden"} for i in range(300)]
            )
        assert _texts(migrated) == {"I like green tea in the morning"}  # no partial write
        migrated.add(ME, "My brother lives in Bergen")
        assert {m for m, _ in _models(migrated)} == {migrated.embedder.model_id}
    finally:
        old.close()
        migrated.close()


def test_writers_of_both_models_are_taken_while_a_migration_runs(url: str) -> None:
    old = Memory(url, embedder="hashing", background=False)
    new = HashingEmbedder(dims=512)
    try:
        old.add(ME, "I like green tea in the morning")
        old.store.set_meta("reembed_to", f"{new.model_id}\t{new.dims}")  # as reembed sets it
        old.add(ME, "My sister lives in Oslo")  # the old model, still the store's
        record = old.list(ME, limit=10)[0]
        old.store.set_vectors([(record, new.embed_batch([record.text])[0])], new.model_id, 512)
        with pytest.raises(EmbeddingMismatchError):  # a third model is not
            old.store.set_vectors(
                [(record, HashingEmbedder(dims=128).embed_batch([record.text])[0])],
                "hashing-128",
                128,
            )
    finally:
        old.close()
    migrated = Memory(url, embedder="hashing:512", reembed=True, background=False)
    try:
        assert _models(migrated) == {("hashing-512", 512)}
        assert migrated.store.get_meta("reembed_to") == ""
    finally:
        migrated.close()


def test_an_async_writer_is_refused_too(url: str) -> None:
    async def main() -> None:
        old = AsyncMemory(url, embedder="hashing", background=False)
        try:
            await old.add(ME, "I like green tea in the morning")
            Memory(url, embedder="hashing:512", reembed=True, background=False).close()
            with pytest.raises(EmbeddingMismatchError):
                await old.add(ME, "My sister lives in Oslo")
        finally:
            await old.close()

    asyncio.run(main())
    with Memory(url, embedder="hashing:512", background=False) as mem:
        assert _texts(mem) == {"I like green tea in the morning"}


def _models(mem: Memory) -> set[tuple[str | None, int | None]]:
    return {(r.embedding_model, r.embedding_dims) for r in mem.list(ME, limit=1000)}
