"""Episodic memory's pure values and rules (no store); re-exported by
:mod:`memstrata.layers.episodic`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memstrata.records import MemoryRecord
from memstrata.search.tokenize import tokenize

__all__ = ["EpisodeHit", "age_days", "recall_score"]


def recall_score(
    similarity: float, age_days: float, importance: float, *, decay: float = 0.95
) -> float:
    """``0.5·similarity + 0.3·decay^age_days + 0.2·importance`` (seed 000 L3)."""
    return 0.5 * similarity + 0.3 * float(decay ** max(0.0, age_days)) + 0.2 * importance


def age_days(observed_at: datetime, now: datetime) -> float:
    return max(0.0, (now - observed_at).total_seconds() / 86_400)


@dataclass(frozen=True, slots=True)
class EpisodeHit:
    record: MemoryRecord
    score: float
    similarity: float


def _topics(texts: Sequence[str], limit: int = 5) -> list[str]:
    counts = Counter(t for text in texts for t in tokenize(text) if len(t) > 2 or not t.isascii())
    return [term for term, _ in counts.most_common(limit)]
