"""Budget allocation and context assembly: shares, order, never over budget."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata import BudgetError
from memstrata.context.assemble import ContextItem, HistoryTurn, assemble
from memstrata.context.budget import allocate, estimate_task
from memstrata.tokens import count_tokens, estimate_tokens

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def test_medium_shares_match_seed() -> None:
    p = allocate(16000)
    assert (p.system, p.memory, p.history, p.reserve) == (3200, 4800, 4800, 3200)
    assert p.usable == 12800


def test_dynamic_adjustments() -> None:
    p = allocate(10000, complexity="complex", knowledge_need=True, conversation_length=31)
    assert p.memory == 5000 and p.reserve == 1500 and p.history == 10000 - 1500 - 1500 - 5000
    simple = allocate(10000, complexity="simple")
    assert simple.history == 4500 and simple.reserve == 2500


def test_reserve_override() -> None:
    p = allocate(1000, reserve_ratio=0.0)
    assert p.reserve == 0 and p.usable == 1000


def test_estimate_task() -> None:
    assert estimate_task("hi") == ("simple", False)
    assert estimate_task("When did Mia move to Porto?")[1] is True
    assert estimate_task("她养了什么宠物？")[1] is True


def test_token_estimate_cjk_and_latin() -> None:
    assert estimate_tokens("abcd" * 10) == 9  # one word: (40 - 1) / 4.5 (tokens.py)
    assert estimate_tokens("four short words here") == 5  # >= 1 token a word, 1/4 a space
    assert estimate_tokens("北京北京北京") == 6  # 0.9 a CJK character
    assert count_tokens("") == 0


def _items(n: int, text: str) -> list[ContextItem]:
    return [
        ContextItem(
            "relevant",
            f"{text} {i}",
            "messages",
            score=1 - i / (n + 1),
            record_id=f"r{i}",
            observed_at=T0 + timedelta(days=i),
        )
        for i in range(n)
    ]


def test_order_follows_pmemo() -> None:
    items = [
        ContextItem("working", "goal: plan trip", "working", 1.0, "w", priority=1),
        ContextItem("relevant", "Mia likes tea", "messages", 0.9, "m", observed_at=T0),
        ContextItem("facts", "allergy: peanuts", "semantic", 0.8, "f", observed_at=T0),
        ContextItem("summaries", "they talked about Lisbon", "summaries", 0.5, "s", observed_at=T0),
        ContextItem("key", "deadline Friday", "key", 1.0, "k", priority=3),
    ]
    history = [HistoryTurn("user", "hello", T0), HistoryTurn("assistant", "hi there", T0)]
    ctx = assemble(
        plan=allocate(4000),
        system_prompt="You are helpful.",
        query="what now?",
        items=items,
        history=history,
        count=count_tokens,
    )
    roles = [m["role"] for m in ctx.messages]
    assert roles == ["system", "system", "user", "assistant", "user"]
    memory = ctx.messages[1]["content"]
    positions = [
        memory.index(s)
        for s in (
            "deadline Friday",
            "they talked about Lisbon",
            "allergy: peanuts",
            "Mia likes tea",
            "plan trip",
        )
    ]
    assert positions == sorted(positions)
    assert "[1 March 2026]" in memory  # dates on every dated block
    assert ctx.messages[-1]["content"] == "what now?"


@settings(max_examples=60, deadline=None)
@given(
    budget=st.integers(min_value=60, max_value=3000),
    n=st.integers(0, 80),
    zh=st.booleans(),
    turns=st.integers(0, 30),
)
def test_never_over_budget(budget: int, n: int, zh: bool, turns: int) -> None:
    text = (
        "我们上周在北京讨论了项目的截止日期和预算问题"
        if zh
        else "we talked about the project deadline and the budget last week"
    )
    history = [
        HistoryTurn("user" if i % 2 else "assistant", f"{text} #{i}", T0) for i in range(turns)
    ]
    plan = allocate(budget)
    try:
        ctx = assemble(
            plan=plan,
            system_prompt="Be brief.",
            query="what was the deadline?",
            items=_items(n, text),
            history=history,
            count=count_tokens,
        )
    except BudgetError:
        assert count_tokens("Be brief.") + count_tokens("what was the deadline?") + 8 > plan.usable
        return
    real = sum(count_tokens(m["content"]) + 4 for m in ctx.messages)
    assert real == ctx.tokens <= plan.usable


def test_least_relevant_cut_first() -> None:
    items = _items(40, "a fairly long memory line about many different things")
    ctx = assemble(
        plan=allocate(600, reserve_ratio=0.0),
        system_prompt=None,
        query="q?",
        items=items,
        history=[],
        count=count_tokens,
    )
    kept = {it.record_id for it in ctx.items}
    assert kept and len(kept) < 40
    worst_kept = min(it.score for it in ctx.items)
    assert all(it.score <= worst_kept for it in ctx.dropped)


def test_budget_too_small_for_system_prompt() -> None:
    with pytest.raises(BudgetError, match="system prompt"):
        assemble(
            plan=allocate(50),
            system_prompt="x " * 200,
            query="q",
            items=[],
            history=[],
            count=count_tokens,
        )
    with pytest.raises(BudgetError):
        allocate(0)


class _Sources:
    """A real, fixed ContextSources: every layer answers from lists given up front."""

    def __init__(self, summaries: list, relevant: list) -> None:  # type: ignore[type-arg]
        self._summaries = summaries
        self._relevant = relevant

    def standing(self, scope, user_scope, summaries):  # type: ignore[no-untyped-def]
        from memstrata.context.standing import Standing

        return Standing(summaries=self._summaries[:summaries] if summaries is not None else [])

    def embed_query(self, scope, query):  # type: ignore[no-untyped-def]
        return None

    def facts(self, scope, vector, limit):  # type: ignore[no-untyped-def]
        return []

    def relevant(self, scope, query, limit, vector, *, facts=False, period=None, clusters=True):  # type: ignore[no-untyped-def]
        return self._relevant[:limit]

    def clusters(self, scope, vector, limit):  # type: ignore[no-untyped-def]
        return []

    def records(self, scope, ids):  # type: ignore[no-untyped-def]
        return []

    def shown(self, scope, records):  # type: ignore[no-untyped-def]
        pass

    def ranked(self, scope, query, limit, vector, *, facts, clusters):  # type: ignore[no-untyped-def]
        from memstrata.search.hybrid import RankedHits

        hits = self.relevant(scope, query, limit, vector, facts=facts, clusters=clusters)
        return RankedHits.of(scope, hits)

    def neighbours(self, scope, record, after):  # type: ignore[no-untyped-def]
        return []


def _record(rid: str, rtype: str, text: str, sources: tuple[str, ...]):  # type: ignore[no-untyped-def]
    from memstrata import Content, MemoryRecord

    return MemoryRecord(
        id=rid,
        tenant="t",
        user="u",
        type=rtype,
        content=Content(text),
        created_at=T0,
        updated_at=T0,
        observed_at=T0,
        source_ids=sources,
    )


def test_digests_of_turns_already_shown_are_skipped() -> None:
    from memstrata import Scope
    from memstrata.context.builder import ContextRequest, build
    from memstrata.search.hit import SearchHit

    m1 = _record("m1", "message", "I love tea", ("m1",))
    m2 = _record("m2", "message", "I love jazz", ("m2",))
    covered = _record("s1", "summary", "loves tea and jazz", ("m1", "m2"))
    partial = _record("s2", "summary", "loves tea, hates rain", ("m1", "m3"))
    cluster = _record("c1", "cluster", "tea", ("m1",))
    hits = [
        SearchHit(m1, 0.9, "messages", ("m1",)),
        SearchHit(m2, 0.8, "messages", ("m2",)),
        SearchHit(cluster, 0.7, "mid_term", ("m1",)),
    ]
    ctx = build(
        _Sources([covered, partial], hits),  # type: ignore[arg-type]
        ContextRequest(Scope("t", "u"), "what do I love?", 4000),
        count_tokens,
    )
    shown = {it.record_id for it in ctx.items}
    assert shown == {"m1", "m2", "s2"}
