"""Mid-term clusters reach the context by centroid similarity (PMemo's top-k), counted as a
hit when shown (a buffered counter), and no longer compete with turns in the fused search
(issue 13)."""

from __future__ import annotations

from dataclasses import replace

from memstrata import Memory, Message, Role, Scope
from memstrata.context.config import ContextConfig


def _fill(mem: Memory, scope: Scope) -> None:
    # 60 rounds: the first 40 leave the 20-round short-term window and are clustered.
    msgs = []
    for i in range(60):
        topic = "sailing the boat across the bay" if i % 2 else "baking sourdough bread loaves"
        msgs.append(Message(role=Role.USER, content=f"turn {i}: we talked about {topic}"))
        msgs.append(Message(role=Role.ASSISTANT, content=f"reply {i} about {topic}"))
    mem.add_messages(scope, msgs)
    mem.flush()


def test_clusters_are_offered_by_similarity_and_counted(mem: Memory, alice: Scope) -> None:
    _fill(mem, alice)
    clusters = mem.layers.mid_term.clusters(alice)
    assert clusters
    other = Scope(alice.tenant, alice.user, session="s2")  # the window of s1 is not shown
    # an overview question (no digest share), 30 hits: fewer than the clusters' members,
    # so a cluster does not merely repeat turns that are shown anyway
    query = "summarize what we said about sailing the boat"
    ctx = mem.build_context(other, query, token_budget=300, reserve_ratio=0.0)
    # offered (here cut by the budget: they score below the turns the search found)
    shown = [it for it in [*ctx.items, *ctx.dropped] if it.layer == "mid_term"]
    assert shown and all(it.digest for it in shown)
    assert {it.record_id for it in shown} <= {c.id for c in clusters}
    # a hit counts a cluster the context showed, not one it was offered and cut
    shown_ids = {it.record_id for it in ctx.items if it.layer == "mid_term"}
    hits = mem.layers.mid_term.hits(alice, [it.record_id for it in shown if it.record_id])
    assert hits and all((n >= 1) == (cid in shown_ids) for cid, n in hits.items())
    # the search itself returned no cluster: search results outrank them only by relevance
    assert all(it.score <= ContextConfig().cluster_score for it in shown)


def test_before_config_keeps_clusters_in_the_search(mem: Memory, alice: Scope) -> None:
    _fill(mem, alice)
    mem.context_config = replace(ContextConfig(), clusters=0)
    other = Scope(alice.tenant, alice.user, session="s2")
    query = "summarize what we said about sailing the boat"
    ctx = mem.build_context(other, query, token_budget=300, reserve_ratio=0.0)
    assert not [it for it in [*ctx.items, *ctx.dropped] if it.layer == "mid_term"]
