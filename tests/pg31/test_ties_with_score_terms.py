"""Found while checking that session 31's scores left every ranking as it was (pg31 left it:
fixing it changes the order of equal scores; the lead fixed it at merge).

README: "Equal fused scores keep the order one side gave them (each side breaks its own
ties by insertion), so the same memories come back in the same order in every store,
whatever their random ids." That holds on the default path (search/fusion.py ``_order``).
With a score term weighed or MMR on (``_needs_records``), src/memstrata/_async/search/
hybrid.py ``search`` sorts ``scored`` by ``(-final, id)``: equal scores come back in the
order of their random ids, another order in every store and every run. Fixed: sorted by
``-final`` alone (``list.sort`` is stable, so the fused order breaks the ties)."""

from __future__ import annotations

from datetime import UTC, datetime

from memstrata import Memory, Scope, SearchConfig

ME = Scope("acme", "zoe", session="s1")
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]


def test_equal_scores_keep_the_insertion_order_with_a_score_term() -> None:
    when = datetime(2026, 5, 1, tzinfo=UTC)
    with Memory("memory://", embedder="hashing", background=False) as mem:
        for word in WORDS:  # one BM25 score for all: the same length, "sailing" once
            mem.add(ME, f"sailing {word}", type="note", importance=0.5, observed_at=when)
        plain = mem.search(ME, "sailing", top_k=8, config=SearchConfig(mode="lexical"))
        assert [h.text for h in plain] == [f"sailing {w}" for w in WORDS]  # holds
        weighed = SearchConfig(mode="lexical", importance_weight=0.1)
        hits = mem.search(ME, "sailing", top_k=8, config=weighed)
    assert [h.text for h in hits] == [f"sailing {w}" for w in WORDS]
