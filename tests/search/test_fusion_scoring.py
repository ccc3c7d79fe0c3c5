"""Pure search pieces: fusion, score terms, MMR, tokenizer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstrata.errors import ValidationError
from memstrata.search.config import SearchConfig
from memstrata.search.fusion import max_scaled, reciprocal_rank_fusion, weighted_fusion
from memstrata.search.hybrid import _fuse
from memstrata.search.mmr import mmr_order
from memstrata.search.scoring import recency
from memstrata.search.tokenize import tokenize
from memstrata.store.base import Candidate


def _c(*ids: str) -> list[Candidate]:
    return [Candidate(i, float(len(ids) - n)) for n, i in enumerate(ids)]


def test_rrf_formula_and_normalisation() -> None:
    fused = reciprocal_rank_fusion({"lexical": _c("a", "b"), "dense": _c("b", "c")}, k=60)
    scores = {f.id: f.score for f in fused}
    best = 2 / 61
    assert scores["b"] == pytest.approx((1 / 62 + 1 / 61) / best)
    assert scores["a"] == pytest.approx((1 / 61) / best)
    assert fused[0].id == "b"
    assert fused[0].ranks == {"lexical": 2, "dense": 1}


def test_rrf_first_everywhere_is_one() -> None:
    fused = reciprocal_rank_fusion({"lexical": _c("a"), "dense": _c("a")})
    assert fused[0].score == pytest.approx(1.0)


def test_weighted_fusion_min_max() -> None:
    lists = {
        "lexical": [Candidate("a", 10.0), Candidate("b", 0.0)],
        "dense": [Candidate("b", 0.9), Candidate("a", 0.5)],
    }
    fused = {f.id: f.score for f in weighted_fusion(lists, {"lexical": 1.0, "dense": 1.0})}
    assert fused["a"] == pytest.approx(0.5)
    assert fused["b"] == pytest.approx(0.5)


def test_weighted_fusion_anchored_list_divided_by_its_best() -> None:
    lists = {
        "lexical": [Candidate("a", 10.0), Candidate("b", 8.0)],
        "dense": [Candidate("b", 0.9), Candidate("a", 0.5)],
    }
    weights = {"lexical": 1.0, "dense": 1.0}
    anchored = {f.id: f.score for f in weighted_fusion(lists, weights, anchored=("lexical",))}
    # b's BM25 is 80 % of the best's: 0.8, not the pool's weakest 0.0 of min-max.
    assert anchored["a"] == pytest.approx((1.0 + 0.0) / 2)
    assert anchored["b"] == pytest.approx((0.8 + 1.0) / 2)
    plain = {f.id: f.score for f in weighted_fusion(lists, weights)}
    assert plain["b"] == pytest.approx(0.5)


def test_max_scaled_falls_back_to_min_max_without_a_positive_best() -> None:
    got = [n for _, n in max_scaled([Candidate("a", 0.0), Candidate("b", -1.0)])]
    assert got == [1.0, 0.0]
    assert max_scaled([]) == []


def test_search_config_lexical_scale_is_checked_and_reaches_fusion() -> None:
    with pytest.raises(ValidationError, match="lexical_scale"):
        SearchConfig(lexical_scale="rank")  # type: ignore[arg-type]
    lists = {"lexical": [Candidate("a", 4.0), Candidate("b", 2.0)], "dense": []}
    fused = {f.id: f.score for f in _fuse(lists, SearchConfig(lexical_scale="max"))}
    assert fused["b"] == pytest.approx(0.5)
    fused = {f.id: f.score for f in _fuse(lists, SearchConfig())}
    assert fused["b"] == pytest.approx(0.0)


@given(
    st.lists(st.text(alphabet="abcdefgh", min_size=1, max_size=2), max_size=20, unique=True),
    st.lists(st.text(alphabet="abcdefgh", min_size=1, max_size=2), max_size=20, unique=True),
)
def test_rrf_scores_bounded_and_sorted(a: list[str], b: list[str]) -> None:
    fused = reciprocal_rank_fusion({"lexical": _c(*a), "dense": _c(*b)})
    scores = [f.score for f in fused]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 < s <= 1.0 + 1e-9 for s in scores)
    assert {f.id for f in fused} == set(a) | set(b)


def test_recency_half_life() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert recency(now, now, 90) == 1.0
    assert recency(now - timedelta(days=90), now, 90) == pytest.approx(0.5)
    assert recency(now + timedelta(days=3), now, 90) == 1.0  # future dates are not a bonus


def test_mmr_skips_near_duplicates() -> None:
    v = np.array([[1, 0], [0.999, 0.0447], [0, 1]], dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    order = mmr_order([1.0, 0.99, 0.6], v, k=2, lam=0.5)
    assert [i for i, _ in order] == [0, 2]
    assert [i for i, _ in mmr_order([1.0, 0.99, 0.6], v, k=2, lam=1.0)] == [0, 1]


def test_tokenize_english_and_chinese() -> None:
    assert tokenize("Running to the adoption agencies") == ["run", "adopt", "agenc"]
    zh = tokenize("我明天要去北京出差")
    assert "北京" in zh and "出差" in zh and "我" not in zh
    assert tokenize("the and of") == []


def test_a_tie_goes_to_the_candidate_a_list_ranked_higher_not_to_the_smaller_id() -> None:
    """Ids are random: ordering ties by id gave the same memories another order in every
    store. Each list's order already breaks its ties by insertion."""
    lists = {"lexical": [Candidate("z", 2.0), Candidate("a", 2.0)], "dense": []}
    assert [f.id for f in weighted_fusion(lists, anchored=("lexical",))] == ["z", "a"]
    dense = {"lexical": [], "dense": [Candidate("y", 0.5), Candidate("b", 0.5)]}
    assert [f.id for f in weighted_fusion(dense)] == ["y", "b"]
