"""Knowledge chunks put back together (pure); re-exported by :mod:`memstrata.layers.knowledge`."""

from __future__ import annotations

from collections.abc import Sequence

from memstrata.policies.chunking import join_chunks
from memstrata.records import MemoryRecord

__all__ = ["rejoin"]

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
