"""``build_context`` renders its candidates from views and decodes none, and builds the same
context as decoding every one (issue 8 §6, issue 13 §3: its cost was proportional to the ~200
candidates asked for at 2,000 tokens, of which a few dozen are shown).

Before views, candidates were decoded as packing needed them; with the assistant penalty a
build on a 10,000-turn store decoded 147 records (82 without it), and a line said again on
another day that was left undecoded was not merged with its shown copy (its date was
missing from "(also …)")."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memstrata import Memory, Message, Role, Scope
from memstrata.context import builder
from memstrata.context.config import ContextConfig
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


def test_a_build_decodes_none_of_its_candidates(
    mem: Memory, alice: Scope, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(mem, alice)
    other = Scope(alice.tenant, alice.user, session="s2")
    decoded = _decoded_ids(mem, monkeypatch)
    ctx = mem.build_context(other, "sailing the boat at dawn", token_budget=2000)
    shown = {it.record_id for it in ctx.items if it.block == "relevant"}
    assert len(shown) >= 20
    assert not shown & decoded, sorted(shown & decoded)[:5]


def _decoded_ids(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The ids ``get_many`` decodes from now on."""
    store: Any = mem.layers.ctx.store
    real = store.get_many
    seen: set[str] = set()

    def counting(scope: Scope, ids: Any) -> Any:
        seen.update(ids)
        return real(scope, ids)

    monkeypatch.setattr(store, "get_many", counting)
    return seen


_DAY0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
_REPLY = (
    "Sailing at dawn is calm. Check the tide chart before you leave the harbour. "
    "Bring a spare rope and an anchor. The wind turns by noon on most days. "
    "Tell someone ashore when you plan to be back. Enjoy the island."
)


def _chat(mem: Memory, scope: Scope, seed: int = 7) -> None:
    """A user's chat with an assistant over 30 days: short requests, long replies that share
    the requests' words, lines said again word for word on other days, relative dates, and
    some turns with a speaker's name in their metadata."""
    rnd = random.Random(seed)
    repeated = ("Did you check the tide chart?", "anchor rope at dawn, again")
    msgs = []
    for i in range(160):
        when = _DAY0 + timedelta(days=i // 6, minutes=i)
        if i % 2:
            words = " ".join(rnd.choice(_WORDS) for _ in range(rnd.choice((4, 12))))
            text = f"Reply {i}: {words}. " + _REPLY * rnd.choice((1, 2))
            msgs.append(Message(Role.ASSISTANT, text, observed_at=when))
            continue
        if i % 10 == 0:
            text = rnd.choice(repeated)
        else:
            words = " ".join(rnd.choice(_WORDS) for _ in range(rnd.choice((3, 8, 20))))
            text = f"turn {i}: {words}" + (" yesterday" if i % 12 == 4 else "")
        meta = {"speaker": "Mia"} if i % 8 == 2 else {}
        msgs.append(Message(Role.USER, text, observed_at=when, metadata=meta))
    mem.add_messages(scope, msgs)
    mem.flush()


_CHAT_QUERIES = (
    "sailing the boat at dawn",
    "did I check the tide chart?",
    "which anchor rope did you recommend?",  # to the assistant: no penalty, no cut
    "Can you remind me what the island chart showed?",
)


@pytest.mark.parametrize("budget", [300, 1000, 2000, 4000])
def test_with_the_assistant_levers_and_repeated_lines_the_context_is_the_eager_one(
    mem: Memory, alice: Scope, budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole context (its items, the candidates it dropped, the tokens) is what
    decoding every candidate gives, with the default levers (assistant penalty, long
    replies cut, repeats merged, relative dates resolved) and with each turned off."""
    _chat(mem, alice)
    other = Scope(alice.tenant, alice.user, session="s2")
    configs = (
        ContextConfig(),
        replace(ContextConfig(), assistant_penalty=0.0, trim_turns_over=0),
        replace(ContextConfig(), question_penalty=0.0, compact_dates=False),
    )
    lazy, eager = [], []
    for config in configs:
        mem.context_config = config
        lazy += [mem.build_context(other, q, token_budget=budget) for q in _CHAT_QUERIES]
    monkeypatch.setattr(builder.ContextRequest, "lazy", property(lambda self: False))
    for config in configs:
        mem.context_config = config
        eager += [mem.build_context(other, q, token_budget=budget) for q in _CHAT_QUERIES]
    assert lazy == eager
    shown = "\n".join(c.text for c in lazy)
    assert "(also " in shown  # a repeated line was merged
    assert "assistant: …" in shown or "… " in shown  # a long reply was cut
    assert "Mia: " in shown  # a speaker named in the metadata


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
    # the context's search: scores of the ranking, as the ranked hits carry (pg31)
    plain = search(
        store, embedder, alice.user_scope, "sailing boat", touch=False, ranking_scores=True, **args
    )
    ranked = search_ranked(store, embedder, alice.user_scope, "sailing boat", **args)
    first = ranked.more(10)
    assert [(h.record.id, h.score) for h in first] == [(h.record.id, h.score) for h in plain[:10]]
    gone = plain[13].record.id
    mem.purge(alice, [gone])  # gone for good between the ranking and the reading
    views = ranked.views()
    assert views is not None and ranked.done
    assert [(v.id, score) for v, score in views[:19]] == [
        (h.record.id, h.score) for h in plain[10:] if h.record.id != gone
    ]
    assert len(views) == 20  # the ranking's next candidate takes the purged one's place
    for view, _score in views[:5]:
        (rec,) = store.get_many(alice.user_scope, [view.id])
        assert (view.type, view.text, view.role, view.session) == (
            rec.type,
            rec.text,
            rec.role,
            rec.session,
        )
        assert (view.observed_at, view.source_ids) == (rec.observed_at, rec.source_ids)
    assert [h.record.access_count for h in ranked.hits] == [0] * 10  # nothing counted


def test_clusters_found_by_the_search_are_shown_from_views_and_counted(
    mem: Memory, alice: Scope, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With clusters in the search (the older configuration), a cluster is a candidate
    like a turn: shown from its view, read only to count its hit."""
    msgs = []
    for i in range(60):  # the first 40 rounds leave the short-term window and are clustered
        topic = "sailing the boat across the bay" if i % 2 else "baking sourdough bread loaves"
        msgs.append(Message(Role.USER, f"turn {i}: we talked about {topic}"))
        msgs.append(Message(Role.ASSISTANT, f"reply {i} about {topic}"))
    mem.add_messages(alice, msgs)
    mem.flush()
    mem.context_config = replace(ContextConfig(), clusters_in_search=True, clusters=0)
    other = Scope(alice.tenant, alice.user, session="s2")
    query = "summarize what we said about sailing the boat"
    ctx = mem.build_context(other, query, token_budget=400, reserve_ratio=0.0)
    shown = [it.record_id for it in ctx.items if it.layer == "mid_term" and it.record_id]
    assert shown  # 40 candidates: a cluster's turns are not all among them
    assert mem.layers.mid_term.hits(alice, shown) == dict.fromkeys(shown, 1)
    monkeypatch.setattr(builder.ContextRequest, "lazy", property(lambda self: False))
    assert mem.build_context(other, query, token_budget=400, reserve_ratio=0.0) == ctx
    assert mem.layers.mid_term.hits(alice, shown) == dict.fromkeys(shown, 2)
