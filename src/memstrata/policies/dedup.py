"""Dedup before insert (seed 002, seed 003): never a second copy of the same memory.

Order: an exact match by content hash, then a near duplicate of the same type at cosine
``>= threshold`` (0.95), then a plain insert. A duplicate is merged into the record already
stored, keeping provenance: ``metadata["mentions"] + 1``, the union of ``source_ids`` and
``tags``, the higher importance, as a new version (the old one stays in history).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from ..filters import Filters
from ..layers.base import LayerContext
from ..records import MemoryRecord
from ..scope import Scope
from ..store.atomic import insert_unless_exists, update_atomically
from ..store.base import RecordWrite

__all__ = ["DedupAction", "DedupResult", "decide", "insert_or_merge", "merge_provenance"]


class DedupAction(StrEnum):
    INSERT = "insert"
    MERGE_EXACT = "merge_exact"
    MERGE_NEAR = "merge_near"


@dataclass(frozen=True, slots=True)
class DedupResult:
    action: DedupAction
    record: MemoryRecord          # the stored record: the new one, or the merged existing one
    similarity: float | None = None


def decide(*, exact_match: bool, best_similarity: float | None,
           threshold: float = 0.95) -> DedupAction:
    """The dedup decision from what the look-ups found (pure)."""
    if exact_match:
        return DedupAction.MERGE_EXACT
    if best_similarity is not None and best_similarity >= threshold:
        return DedupAction.MERGE_NEAR
    return DedupAction.INSERT


def _union(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*first, *second)))


def merge_provenance(existing: MemoryRecord, duplicate: MemoryRecord,
                     now: datetime) -> MemoryRecord:
    """The next version of ``existing`` that also remembers ``duplicate``'s provenance."""
    mentions = int(existing.metadata.get("mentions", 1)) + 1
    return replace(
        existing, version=existing.version + 1, updated_at=now,
        importance=max(existing.importance, duplicate.importance),
        source_ids=_union(existing.source_ids, duplicate.source_ids or (duplicate.id,)),
        tags=_union(existing.tags, duplicate.tags),
        metadata={**existing.metadata, "mentions": mentions},
    )


def insert_or_merge(ctx: LayerContext, scope: Scope, record: MemoryRecord) -> DedupResult:
    """Store ``record`` unless it duplicates a stored record of its type, then merge."""
    types = [record.type.value]
    existing = ctx.store.find_by_hash(scope, record.content_hash, types) \
        if record.content_hash else None
    similarity: float | None = None
    write: RecordWrite | None = None
    if existing is None:
        write = ctx.writes([record])[0]
        if write.vector is not None:
            hits = ctx.store.vector_search(scope, write.vector, 1,
                                           Filters(types=frozenset({record.type})))
            if hits:
                similarity = hits[0].score
                existing = ctx.store.get(scope, hits[0].id)
    action = decide(exact_match=write is None, best_similarity=similarity,
                    threshold=ctx.config.dedup_cosine)
    if action is DedupAction.INSERT or existing is None:
        # Atomic: a concurrent writer may have stored the same text since the look-up.
        found = insert_unless_exists(ctx.store, scope, write or ctx.writes([record])[0], types)
        if found is None:
            return DedupResult(DedupAction.INSERT, record, similarity)
        existing, action = found, DedupAction.MERGE_EXACT
    now = ctx.clock.now()
    merged = update_atomically(ctx.store, scope, existing.id,
                               lambda current: merge_provenance(current, record, now))
    return DedupResult(action, merged, similarity)
