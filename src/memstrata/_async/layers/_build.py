"""Record construction and store look-ups shared by the derived-memory layer services."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from memstrata._async.layers.base import AsyncLayerContext
from memstrata._async.store.base import Vector
from memstrata.filters import Filters, MetadataCondition
from memstrata.records import MemoryRecord, RecordType, Source
from memstrata.scope import Scope
from memstrata.text import DEFAULT_MAX_CHARS
from memstrata.writes import note_record

__all__ = ["build_record", "list_records", "query_vector"]


def build_record(
    ctx: AsyncLayerContext,
    scope: Scope,
    text: str,
    *,
    type: RecordType,
    importance: float,
    structured: Mapping[str, Any],
    metadata: Mapping[str, Any] | None = None,
    confidence: float = 1.0,
    source: Source = Source.SYSTEM_GENERATED,
    source_ids: Sequence[str] = (),
    tags: Sequence[str] = (),
    summary: str | None = None,
    observed_at: datetime | None = None,
    valid_from: datetime | None = None,
) -> MemoryRecord:
    """A new derived record (not stored yet) stamped with the context's clock and model,
    with PII already redacted by the tenant's policy (``Memory(pii=...)``)."""
    return ctx.redact(
        note_record(
            scope,
            text,
            type=type,
            now=ctx.clock.now(),
            model_id=ctx.embedder.model_id,
            dims=ctx.embedder.dims,
            max_chars=DEFAULT_MAX_CHARS,
            importance=importance,
            confidence=confidence,
            tags=tags,
            metadata=metadata,
            source=source,
            observed_at=observed_at,
            source_ids=source_ids,
            valid_from=valid_from,
            summary=summary,
            structured=structured,
        )
    )


async def list_records(
    ctx: AsyncLayerContext,
    scope: Scope,
    type: RecordType,
    *,
    limit: int = 1000,
    include_superseded: bool = False,
    **metadata: Any,
) -> list[MemoryRecord]:
    """Current active records of one type whose metadata equals ``metadata``, newest first."""
    conditions = tuple(MetadataCondition(k, "eq", v) for k, v in metadata.items())
    filters = Filters(
        types=frozenset({type}), metadata=conditions, include_superseded=include_superseded
    )
    return await ctx.store.list(scope, filters, limit=limit)


async def query_vector(ctx: AsyncLayerContext, query: str, scope: Scope | None = None) -> Vector:
    """The embedding of a search query (asymmetric models embed queries differently);
    with ``scope``, redacted by its tenant's PII policy before it reaches the embedder, and
    cached among the entries of the one who asks (``embedder/cache.py``)."""
    embedder = ctx.embedder
    if scope is not None:
        query = ctx.redact_query(scope, query)
        embedder = ctx.embedder_for(scope)
    vector: Vector = (await embedder.embed_batch([query], query=True))[0]
    return vector
