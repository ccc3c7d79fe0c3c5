"""Migrating a store to another embedding model, batch by batch."""

from __future__ import annotations

from collections.abc import Callable

from memstrata._async.embedder.base import AsyncEmbedder
from memstrata._async.store.base import AsyncStore

__all__ = ["reembed_store"]


async def reembed_store(
    store: AsyncStore,
    embedder: AsyncEmbedder,
    *,
    batch_size: int = 256,
    on_batch: Callable[[int], None] | None = None,
) -> int:
    """Embed every record of the store again with ``embedder``; returns how many.

    Vectors are replaced batch by batch; the store's model metadata is switched only by the
    caller once every batch succeeded, so an interrupted migration is simply run again.
    """
    done = 0
    async for batch in store.scan(batch_size):
        vectors = await embedder.embed_batch([r.text for r in batch])
        await store.set_vectors(
            [(r, vectors[i]) for i, r in enumerate(batch)], embedder.model_id, embedder.dims
        )
        done += len(batch)
        if on_batch is not None:
            on_batch(len(batch))
    return done
