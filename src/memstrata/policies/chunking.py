"""Split long text into overlapping token-bounded chunks (seed 002 §8.6), and join them back.

Chunks are exact slices of the text: chunk ``i`` is ``text[start_i:end_i]`` and repeats the
last ``overlap_chars`` characters of chunk ``i - 1``, so :func:`join_chunks` restores the
original text exactly. A chunk ends at the last paragraph break that keeps it within
``chunk_tokens`` (if that break leaves it at least half full), else at the last sentence end,
else at a space, else anywhere; the overlap starts at a sentence or word boundary when one
gives at least half of ``overlap_tokens``.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import ValidationError
from ..tokens import TokenCounter, count_tokens

__all__ = ["Chunk", "chunk_text", "join_chunks"]

_PARAGRAPH = re.compile(r"\n\s*\n\s*")
_SENTENCE = re.compile(r"(?:[.!?;](?=\s)|[。！？；…]+[”」』）)]*)\s*")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Chunk:
    text: str
    start: int  # offset of the chunk in the original text
    overlap_chars: int  # leading characters repeated from the previous chunk


def _ends(pattern: re.Pattern[str], text: str) -> list[int]:
    return sorted({m.end() for m in pattern.finditer(text)})


def _head_fits(tokens: Callable[[int, int], int], start: int, limit: int) -> Callable[[int], bool]:
    return lambda end: tokens(start, end) <= limit


def _tail_fits(tokens: Callable[[int, int], int], end: int, limit: int) -> Callable[[int], bool]:
    return lambda start: tokens(start, end) <= limit


def _last_fitting(
    bounds: Sequence[int], lo: int, hi: int, fits: Callable[[int], bool]
) -> int | None:
    """The largest boundary in (lo, hi] for which ``fits(boundary)`` holds (monotone)."""
    i = bisect.bisect_right(bounds, hi)
    candidates = bounds[bisect.bisect_right(bounds, lo) : i]
    # fits is monotone decreasing in the boundary: binary search the last True
    left, right, best = 0, len(candidates) - 1, None
    while left <= right:
        mid = (left + right) // 2
        if fits(candidates[mid]):
            best, left = candidates[mid], mid + 1
        else:
            right = mid - 1
    return best


def chunk_text(
    text: str,
    chunk_tokens: int = 2000,
    overlap_tokens: int = 200,
    counter: TokenCounter | None = None,
) -> list[Chunk]:
    """Chunks of at most ``chunk_tokens`` tokens overlapping by at most ``overlap_tokens``."""
    if chunk_tokens < 1 or overlap_tokens < 0 or overlap_tokens >= chunk_tokens:
        raise ValidationError(
            f"chunking needs chunk_tokens >= 1 and 0 <= overlap_tokens < chunk_tokens, got "
            f"{chunk_tokens} and {overlap_tokens}"
        )
    if not text:
        return []

    def tokens(a: int, b: int) -> int:
        return count_tokens(text[a:b], counter)

    n = len(text)
    every: Sequence[int] = range(1, n + 1)
    levels: list[Sequence[int]] = [
        _ends(_PARAGRAPH, text),
        _ends(_SENTENCE, text),
        _ends(_SPACE, text),
        every,
    ]
    chunks: list[Chunk] = []
    start, overlap = 0, 0
    while True:
        reach = _reach(tokens, start, n, chunk_tokens)
        if reach == n and tokens(start, n) <= chunk_tokens:
            chunks.append(Chunk(text[start:], start, overlap))
            return chunks
        end = None
        hard = _last_fitting(every, start, reach, _head_fits(tokens, start, chunk_tokens))
        hard = hard or start + 1
        for level, bounds in enumerate(levels):
            cut = _last_fitting(bounds, start, hard, lambda b: True)
            if cut is not None and (
                level == len(levels) - 1 or tokens(start, cut) * 2 >= chunk_tokens
            ):
                end = cut
                break
        end = end or hard
        chunks.append(Chunk(text[start:end], start, overlap))
        nxt = end
        if overlap_tokens:
            lowest = _first_fitting(every, start, end, _tail_fits(tokens, end, overlap_tokens))
            for level, bounds in enumerate(levels[1:]):
                cut = _first_at_or_after(bounds, lowest, end)
                if cut is not None and (
                    level == len(levels) - 2 or tokens(cut, end) * 2 >= overlap_tokens
                ):
                    nxt = cut
                    break
        # always progress: the next chunk starts after this one's start
        nxt = max(nxt, start + 1)
        overlap = end - nxt
        start = nxt


def _reach(tokens: Callable[[int, int], int], start: int, n: int, limit: int) -> int:
    """``n``, or a position past ``start`` whose span from ``start`` holds more than
    ``limit`` tokens: no chunk from ``start`` ends beyond it (a span's tokens grow with
    it), so a chunk's searches count spans about its own length, not the whole remaining
    text (a 1 MB document without a break took minutes: every chunk counted all of it)."""
    width = 8 * limit
    while start + width < n and tokens(start, start + width) <= limit:
        width *= 2
    return min(n, start + width)


def _first_at_or_after(bounds: Sequence[int], lo: int, hi: int) -> int | None:
    i = bisect.bisect_left(bounds, lo)
    if i < len(bounds) and bounds[i] < hi:
        return bounds[i]
    return None


def _first_fitting(every: Sequence[int], lo: int, hi: int, fits: Callable[[int], bool]) -> int:
    """The smallest position in (lo, hi) with ``fits`` true (monotone increasing); else hi."""
    left, right, best = lo + 1, hi - 1, hi
    while left <= right:
        mid = (left + right) // 2
        if fits(mid):
            best, right = mid, mid - 1
        else:
            left = mid + 1
    return best


def join_chunks(chunks: Sequence[tuple[str, int]]) -> str:
    """Re-join consecutive chunks given as ``(text, overlap_chars)``, dropping each overlap."""
    parts = [text if i == 0 else text[overlap:] for i, (text, overlap) in enumerate(chunks)]
    return "".join(parts)
