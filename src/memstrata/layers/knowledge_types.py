"""Knowledge chunks put back together (pure); re-exported by :mod:`memstrata.layers.knowledge`."""

from __future__ import annotations

from collections.abc import Sequence

from memstrata.layers.types import LayerConfig
from memstrata.policies.chunking import Chunk, chunk_text, join_chunks
from memstrata.records import MemoryRecord
from memstrata.text import validate_content

__all__ = ["MAX_DOCUMENT_CHARS", "document_chunks", "rejoin"]

MAX_DOCUMENT_CHARS = 10_000_000  # the longest document ``knowledge.ingest`` takes


def document_chunks(text: str, config: LayerConfig) -> list[Chunk]:
    """The chunks ``knowledge.ingest`` stores ``text`` as (a ``ValidationError`` for a text it
    refuses), computed once: their number is what the ingest admits under the quotas."""
    text = validate_content(text, max_chars=MAX_DOCUMENT_CHARS)
    return chunk_text(text, config.chunk_tokens, config.chunk_overlap_tokens)


_GAP = "\n…\n"


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
