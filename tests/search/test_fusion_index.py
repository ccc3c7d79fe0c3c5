"""Fusion's index of candidates (one ``Fused`` per id, made once) holds what one built per
candidate held: ranks and raw scores per list, a repeated id's last place winning."""

from __future__ import annotations

import random

from memstrata.search.fusion import Fused, _index, weighted_fusion
from memstrata.store.base import Candidate


def _reference(lists: dict[str, list[Candidate]]) -> dict[str, Fused]:
    fused: dict[str, Fused] = {}
    for name, cands in lists.items():
        for rank, c in enumerate(cands, start=1):
            f = fused.setdefault(c.id, Fused(c.id, 0.0))
            f.ranks[name] = rank
            f.raw[name] = c.score
    return fused


def test_index_matches_one_fused_per_candidate() -> None:
    rng = random.Random(5)
    for _ in range(50):
        ids = [f"r{i}" for i in range(rng.randint(0, 40))]
        lists = {
            name: [Candidate(rng.choice(ids), rng.random()) for _ in range(rng.randint(0, 30))]
            if ids
            else []
            for name in ("lexical", "dense")
        }
        got, want = _index(lists), _reference(lists)
        assert list(got) == list(want)
        assert [(f.id, f.score, f.ranks, f.raw) for f in got.values()] == [
            (f.id, f.score, f.ranks, f.raw) for f in want.values()
        ]
        fused = weighted_fusion(lists, {"lexical": 0.6, "dense": 0.4}, anchored=("lexical",))
        assert [f.id for f in fused] == sorted(
            {f.id for f in fused}, key=lambda i: (-next(x.score for x in fused if x.id == i), i)
        )
