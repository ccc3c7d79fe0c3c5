"""Score terms applied after fusion (pure functions of a record and a time).

The final score of a hit is::

    final = relevance
          + w_recency    · 0.5 ^ (age_days / half_life_days)      (time decay, seed 001: 90 d)
          + w_importance · importance
          + w_access     · (1 − exp(−access_count / hot_accesses)) (access heat, seed 000: 5)

``relevance`` is the fused lexical+dense score in [0, 1]; ``age_days`` counts from the
record's ``observed_at`` to now (never negative). ``final`` ranks the hits; the score a hit
reports is the same sum with its match score (search/fusion.py ``match_scores``) in place
of ``relevance``.
"""

from __future__ import annotations

import math
from datetime import datetime

from ..records import MemoryRecord

__all__ = ["access_heat", "recency"]


def recency(observed_at: datetime, now: datetime, half_life_days: float) -> float:
    age_days = max(0.0, (now - observed_at).total_seconds() / 86400.0)
    return float(0.5 ** (age_days / half_life_days))


def access_heat(record: MemoryRecord, hot_accesses: float = 5.0) -> float:
    return 1.0 - math.exp(-record.access_count / hot_accesses)
