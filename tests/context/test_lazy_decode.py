"""``build_context`` decodes only the candidates it can show, and builds the same context as
decoding every one (issue 8 §6, issue 13 §3: its cost was proportional to the ~200 candidates
asked for at 2,000 tokens, of which a few dozen are shown)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from memstrata import Memory, Message, Role, Scope
from memstrata.context import builder
from memstrata.filters import Filters
from memstrata.search.hybrid import search, search_ranked

_WORDS = "sailing boat bay harbour wind dawn anchor rope island tide chart compass".split()


def _fill(mem: Memory, scope: Scope, n: int = 240, seed: int = 5) -> None:
    rnd = random.Random(seed)
    msgs = []
    for i in range(n):
        # lengths from a few words to a paragraph: short turns can fill a gap late
        words = [rnd.choice(_WORDS) for _ in range(rnd.choice((2, 3, 8, 20, 60)))]
        msgs.append(Message(role=Role.USER, content=f"turn {i}: " + " ".join(words)))
    mem.add_messages(scope, msgs)
    mem.flush()


def _decoded(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the records ``get_many`` decodes from now on."""
    store: Any = mem.layers.ctx.store
    real = store.get_many
    seen: list[int] = []

    def counting(scope: Scope, ids: Any) -> Any:
        seen.append(len(ids))
        return real(scope, ids)

    monkeypatch.setattr(store, "get_many", counting)
    return seen


_QUERIES = ("sailing the boat at dawn", "anchor rope", "which island did the tide chart show")


@pytest.mark.parametrize("budget", [1000, 2000, 4000])
def test_the_context_is_the_one_decoding_every_candidate_gives(
    mem: Memory, alice: Scope, budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(mem, alice)
    other = Scope(alice.tenant, alice.user, session="s2")
    lazy = [mem.build_context(other, q, token_budget=budget) for q in _QUERIES]
    monkeypatch.setattr(builder.ContextRequest, "lazy", property(lambda self: False))
    eager = [mem.build_context(other, q, token_budget=budget) for q in _QUERIES]
    assert [c.messages for c in lazy] == [c.messages for c in eager]
    assert [[it.record_id for it in c.items] for c in lazy] == [
        [it.record_id for it in c.items] for c in eager
    ]


def test_a_build_decodes_far_fewer_records_than_it_ranks(
    mem: Memory, alice: Scope, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(mem, alice)
    other = Scope(alice.tenant, alice.user, session="s2")
    decoded = _decoded(mem, monkeypatch)
    ctx = mem.build_context(other, "sailing the boat at dawn", token_budget=2000)
    asked = builder.ContextRequest(other, "q", 2000).relevant_limit  # 200 candidates ranked
    shown = sum(1 for it in ctx.items if it.block == "relevant")
    assert shown >= 20
    # decoded: the first 80 candidates, those that could still fit, facts, clusters
    assert sum(decoded) < asked * 0.75, (decoded, shown)


def test_a_custom_token_counter_decodes_every_candidate(
    mem: Memory, alice: Scope, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the built-in estimate bounds a line by its text; with another counter the
    context is built as before (every candidate decoded)."""
    _fill(mem, alice)
    other = Scope(alice.tenant, alice.user, session="s2")
    mem._count = lambda text: len(text.split()) + 1
    ctx = mem.build_context(other, "sailing the boat at dawn", token_budget=2000)
    monkeypatch.setattr(builder.ContextRequest, "lazy", property(lambda self: False))
    assert mem.build_context(other, "sailing the boat at dawn", token_budget=2000) == ctx


def test_ranked_hits_match_the_search_and_skip_records_purged_meanwhile(
    mem: Memory, alice: Scope
) -> None:
    _fill(mem, alice, 60)
    store: Any = mem.layers.ctx.store
    embedder = mem._embedder.for_scope(alice)
    args: dict[str, Any] = {
        "top_k": 30,
        "filters": Filters(),
        "config": mem.search_config,
        "now": mem._clock.now(),
    }
    plain = search(store, embedder, alice.user_scope, "sailing boat", touch=False, **args)
    ranked = search_ranked(store, embedder, alice.user_scope, "sailing boat", **args)
    first = ranked.more(10)
    assert [(h.record.id, h.score) for h in first] == [(h.record.id, h.score) for h in plain[:10]]
    rest = ranked.rest()
    assert rest is not None and len(rest) == 20
    gone = rest[3][0].id
    mem.purge(alice, [gone])  # gone for good between the ranking and the decoding
    ranked.take([f for f, *_ in rest])
    assert ranked.done
    assert [h.record.id for h in ranked.hits] == [h.record.id for h in plain if h.record.id != gone]
    assert [h.record.access_count for h in ranked.hits] == [0] * 29  # nothing counted
