"""Migrating a store to another embedding model, batch by batch."""

from __future__ import annotations

from collections.abc import Callable

from memstrata._async.embedder.base import AsyncEmbedder
from memstrata._async.store.base import AsyncStore
from memstrata.records import MemoryRecord
from memstrata.store import one_model

__all__ = ["MAX_PASSES", "migrate_model", "reembed_store"]

# Passes over the store at most: the second finds what the first could not see (below), a
# third what writers still on the old model wrote meanwhile (the store takes their vectors
# until the switch: store/one_model.py).
MAX_PASSES = 3


async def reembed_store(
    store: AsyncStore,
    embedder: AsyncEmbedder,
    *,
    batch_size: int = 256,
    on_batch: Callable[[int], None] | None = None,
) -> int:
    """Embed again, with ``embedder``, every record whose vector another model made (or
    that has none); returns how many.

    Vectors are replaced batch by batch; the store's model metadata is switched only by the
    caller once every batch succeeded, so an interrupted migration is run again and embeds
    only what it had not done. The store is walked again until a walk finds nothing left:
    a walk pages by insertion order, and on PostgreSQL a row committed after a later one
    (its ``seq`` taken earlier) is behind the page the walk has reached when it appears.
    """
    await _mark(store, embedder)
    done = 0
    for _ in range(MAX_PASSES):
        found = 0
        async for batch in store.scan(batch_size):
            stale = [r for r in batch if not _made_by(r, embedder)]
            if not stale:
                continue
            vectors = await embedder.embed_batch([r.text for r in stale])
            await store.set_vectors(
                [(r, vectors[i]) for i, r in enumerate(stale)], embedder.model_id, embedder.dims
            )
            found += len(stale)
            if on_batch is not None:
                on_batch(len(stale))
        done += found
        if not found:
            break
    return done


async def _mark(store: AsyncStore, embedder: AsyncEmbedder) -> None:
    """Let the store take this model's vectors beside its own until the caller switches it
    (``reembed_to``, store/one_model.py); a store of this model, or of none yet, needs no
    mark."""
    model = await store.get_meta(one_model.MODEL_KEY)
    dims = await store.get_meta(one_model.DIMS_KEY)
    if model is not None and (model, dims) != (embedder.model_id, str(embedder.dims)):
        await store.set_meta(one_model.NEXT_KEY, f"{embedder.model_id}\t{embedder.dims}")


async def migrate_model(store: AsyncStore, embedder: AsyncEmbedder) -> int:
    """Move the whole store to ``embedder``'s model: mark it (``reembed_to`` holds
    "model\tdims" of the model it moves to), re-embed every record, switch the store's
    model (its dims before its model), then empty the mark. A run killed anywhere in
    between leaves the mark, and the store holds vectors of two models until a run ends:
    the caller refuses to open it as one model's meanwhile (``Memory``)."""
    await store.set_meta(one_model.NEXT_KEY, f"{embedder.model_id}\t{embedder.dims}")
    done = await reembed_store(store, embedder)
    # Dims before the model: another process opening the store reads the model first, so
    # once it sees a model it also sees its dims.
    await store.set_meta(one_model.DIMS_KEY, str(embedder.dims))
    await store.set_meta(one_model.MODEL_KEY, embedder.model_id)
    await store.set_meta(one_model.NEXT_KEY, "")
    return done


def _made_by(record: MemoryRecord, embedder: AsyncEmbedder) -> bool:
    return (record.embedding_model, record.embedding_dims) == (embedder.model_id, embedder.dims)
