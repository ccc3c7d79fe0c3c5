"""Semantic memory, knowledge side: document chunks for retrieval (seed 002 §8.6).

A document (or a long answer) is split into ``chunk_tokens`` (2000) token chunks overlapping
by ``chunk_overlap_tokens`` (200); each chunk is a ``KNOWLEDGE`` record whose metadata names
its document (``qa_id``), its place (``chunk_index`` of ``chunk_count``) and how many leading
characters it repeats from the previous chunk (``overlap_chars``). At read time
:func:`rejoin` puts the hits of one document back together, in order, overlaps removed.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..policies.chunking import chunk_text, join_chunks
from ..records import MemoryRecord, RecordType, Source, new_id
from ..scope import Scope
from ..text import validate_content
from ._build import build_record
from .base import LayerContext

__all__ = ["KnowledgeService", "rejoin"]

_GAP = "\n…\n"


class KnowledgeService:
    def __init__(self, ctx: LayerContext) -> None:
        self._ctx = ctx

    def ingest(
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
        text = validate_content(text, max_chars=10_000_000)
        cfg = self._ctx.config
        doc = qa_id or new_id()
        chunks = chunk_text(text, cfg.chunk_tokens, cfg.chunk_overlap_tokens)
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
        self._ctx.insert(records)
        return records


def rejoin(hits: Sequence[MemoryRecord]) -> list[tuple[str, str]]:
    """``(qa_id, text)`` per document among ``hits``, in the order each document first
    appears; chunks joined by index with overlaps removed, a gap marked with "…".

    Records that are not chunks (no ``qa_id``) pass through as their own document.
    """
    order: list[str] = []
    groups: dict[str, dict[int, MemoryRecord]] = {}
    for record in hits:
        qa_id = record.metadata.get("qa_id")
        key = str(qa_id) if qa_id is not None else record.id
        if key not in groups:
            order.append(key)
            groups[key] = {}
        groups[key].setdefault(int(record.metadata.get("chunk_index", 0)), record)
    out: list[tuple[str, str]] = []
    for key in order:
        parts: list[str] = []
        run: list[tuple[str, int]] = []
        previous: int | None = None
        for index in sorted(groups[key]):
            record = groups[key][index]
            if previous is not None and index != previous + 1:
                parts.append(join_chunks(run))
                run = []
            overlap = int(record.metadata.get("overlap_chars", 0)) if run else 0
            run.append((record.text, overlap))
            previous = index
        parts.append(join_chunks(run))
        out.append((key, _GAP.join(parts)))
    return out
