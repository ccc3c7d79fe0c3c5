"""Procedural memory's pure values and rules (no store); re-exported by
:mod:`memstrata.layers.procedural`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memstrata.records import MemoryRecord
from memstrata.search.tokenize import tokenize

__all__ = ["FailureWarning", "Suggestion", "indicators_match", "should_reuse", "success_rate"]


def should_reuse(
    similarity: float, rate: float, *, min_similarity: float = 0.8, min_success_rate: float = 0.9
) -> bool:
    return similarity > min_similarity and rate > min_success_rate


def success_rate(successes: int, uses: int) -> float:
    return successes / uses if uses > 0 else 0.0


def indicators_match(text: str, indicators: Sequence[str]) -> list[str]:
    """The indicators found in ``text``: whole words for Latin text, substrings for CJK."""
    words = set(tokenize(text))
    lower = text.casefold()
    found = []
    for indicator in indicators:
        ind = indicator.strip().casefold()
        if not ind:
            continue
        if ind.isascii():
            terms = tokenize(ind)
            if terms and all(t in words for t in terms):
                found.append(indicator)
        elif ind in lower:
            found.append(indicator)
    return found


@dataclass(frozen=True, slots=True)
class Suggestion:
    subtasks: list[str]
    strategy: str
    confidence: float  # the pattern's success rate
    similarity: float
    pattern: MemoryRecord
    reason: str = "Based on a similar successful task"


@dataclass(frozen=True, slots=True)
class FailureWarning:
    pattern: str
    mitigation: str
    severity: int
    matched: list[str]
    record: MemoryRecord


def _indicators(goal: str, limit: int = 4) -> list[str]:
    seen: dict[str, None] = {}
    for term in tokenize(goal):
        if len(term) > 3 or not term.isascii():
            seen.setdefault(term, None)
    return list(seen)[:limit]
