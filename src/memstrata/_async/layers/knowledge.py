"""Semantic memory, knowledge side: document chunks for retrieval (seed 002 §8.6).

A document (or a long answer) is split into ``chunk_tokens`` (2000) token chunks overlapping
by ``chunk_overlap_tokens`` (200); each chunk is a ``KNOWLEDGE`` record whose metadata names
its document (``qa_id``), its place (``chunk_index`` of ``chunk_count``) and how many leading
characters it repeats from the previous chunk (``overlap_chars``). At read time
:func:`rejoin` puts the hits of one document back together, in order, overlaps removed.
"""

from __future__ import annotations

from collections.abc import Sequence

from memstrata._async.layers._build import build_record
from memstrata._async.layers.base import AsyncLayerContext
from memstrata.layers.knowledge_types import document_chunks, rejoin
from memstrata.records import MemoryRecord, RecordType, Source, new_id
from memstrata.scope import Scope
from memstrata.text import validate_content
from memstrata.validation import check_id, check_tags, check_unit
from memstrata.writes import check_scope

__all__ = ["AsyncKnowledgeService", "rejoin"]


class AsyncKnowledgeService:
    def __init__(self, ctx: AsyncLayerContext) -> None:
        self._ctx = ctx

    async def ingest(
        self,
        scope: Scope,
        text: str,
        qa_id: str | None = None,
        title: str | None = None,
        *,
        importance: float = 0.5,
        tags: Sequence[str] = (),
    ) -> list[MemoryRecord]:
        """Store ``text`` as chunks of one document; returns the chunk records in order."""
        check_scope(scope)
        chunks = document_chunks(text, self._ctx.config)
        if qa_id is not None:
            check_id(qa_id, "qa_id")
        if title is not None:
            title = validate_content(title, field="title")
        check_unit(importance, "importance")
        tags = check_tags(tags)
        doc = qa_id or new_id()
        records = [
            build_record(
                self._ctx,
                scope,
                chunk.text,
                type=RecordType.KNOWLEDGE,
                importance=importance,
                source=Source.EXTERNAL_DATA,
                tags=tags,
                structured={},
                metadata={
                    "qa_id": doc,
                    "chunk_index": i,
                    "chunk_count": len(chunks),
                    "overlap_chars": chunk.overlap_chars,
                    "start_char": chunk.start,
                    **({"title": title} if title else {}),
                },
                summary=title,
            )
            for i, chunk in enumerate(chunks)
        ]
        await self._ctx.insert(records)
        return records
