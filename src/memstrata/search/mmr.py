"""Maximal marginal relevance (Carbonell & Goldstein 1998), pure.

Greedily picks the item maximising ``λ · relevance(d) − (1 − λ) · max_{s ∈ chosen} cos(d, s)``
so near-duplicates do not crowd out other relevant memories (seed 002 §8.9: λ = 0.7 over a
3× candidate pool).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["mmr_order"]


def mmr_order(
    relevance: Sequence[float], vectors: npt.NDArray[np.float32], k: int, lam: float = 0.7
) -> list[tuple[int, float]]:
    """Indices of the chosen items in order, each with its redundancy penalty (max cosine)."""
    n = len(relevance)
    if n == 0 or k <= 0:
        return []
    rel = np.asarray(relevance, dtype=np.float64)
    sims = vectors @ vectors.T
    chosen: list[tuple[int, float]] = []
    max_sim = np.full(n, -np.inf)
    available = np.ones(n, dtype=bool)
    for _ in range(min(k, n)):
        redundancy = np.where(np.isfinite(max_sim), max_sim, 0.0)
        value = lam * rel - (1.0 - lam) * redundancy
        value[~available] = -np.inf
        i = int(np.argmax(value))
        chosen.append((i, float(redundancy[i])))
        available[i] = False
        max_sim = np.maximum(max_sim, sims[i])
    return chosen
