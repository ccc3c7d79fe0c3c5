"""build_context's levers (context/config.py) over fixed sources, and the date resolver."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata import Content, MemoryRecord, Scope, ValidationError
from memstrata.context.assemble import ContextItem, assemble
from memstrata.context.budget import allocate
from memstrata.context.builder import ContextRequest, build
from memstrata.context.config import ContextConfig
from memstrata.context.standing import Standing
from memstrata.context.temporal import Period, resolve_period
from memstrata.search.hit import SearchHit
from memstrata.tokens import count_tokens

T0 = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)


def _msg(
    rid: str,
    text: str,
    when: datetime,
    session: str = "s1",
    rtype: str = "message",
    sources: tuple[str, ...] = (),
) -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        tenant="t",
        user="u",
        type=rtype,
        content=Content(text),
        created_at=when,
        updated_at=when,
        observed_at=when,
        session=session,
        source_ids=sources or (rid,),
    )


class _Sources:
    """Fixed answers for every source; records the calls that matter."""

    def __init__(
        self, hits: list[SearchHit], turns: list[MemoryRecord], dated: list[SearchHit] | None = None
    ) -> None:
        self.hits, self.turns, self.dated = hits, turns, dated or []
        self.embedded: list[str] = []
        self.periods: list[Period | None] = []
        self.cluster_flags: list[bool] = []
        self.mid_term: list[tuple[MemoryRecord, float]] = []

    def standing(self, scope: Scope, user_scope: Scope, summaries: int | None) -> Standing:
        return Standing()

    def embed_query(self, scope: Scope, query: str) -> Any:
        self.embedded.append(query)
        return [1.0]

    def facts(self, scope: Scope, vector: Any, limit: int) -> list[tuple[MemoryRecord, float]]:
        return []

    def relevant(
        self,
        scope: Scope,
        query: str,
        limit: int,
        vector: Any,
        *,
        facts: bool = False,
        period: Period | None = None,
        clusters: bool = True,
    ) -> list[SearchHit]:
        self.periods.append(period)
        self.cluster_flags.append(clusters)
        return (self.dated if period is not None else self.hits)[:limit]

    def clusters(self, scope: Scope, vector: Any, limit: int) -> list[tuple[MemoryRecord, float]]:
        return self.mid_term[:limit]

    def records(self, scope: Scope, ids: Any) -> list[MemoryRecord]:
        return [t for t in self.turns if t.id in set(ids)]

    def shown(self, scope: Scope, records: Any) -> None:
        pass

    def ranked(self, scope, query, limit, vector, *, facts, clusters):  # type: ignore[no-untyped-def]
        from memstrata.search.hybrid import RankedHits

        hits = self.relevant(scope, query, limit, vector, facts=facts, clusters=clusters)
        return RankedHits.of(scope, hits)

    def neighbours(self, scope: Scope, record: MemoryRecord, after: bool) -> list[MemoryRecord]:
        i = next(i for i, t in enumerate(self.turns) if t.id == record.id)
        out = self.turns[max(0, i - 1) : i]
        if after:
            out += self.turns[i + 1 : i + 2]
        return out


def _turns(n: int = 6) -> list[MemoryRecord]:
    return [
        _msg(f"m{i}", f"turn number {i} " + "words " * 5, T0 + timedelta(seconds=10 * i))
        for i in range(n)
    ]


def _build(src: _Sources, cfg: ContextConfig, budget: int = 4000) -> Any:
    return build(
        src,
        ContextRequest(
            Scope("t", "u"),
            "what?",
            budget,
            reserve_ratio=0.0,  # type: ignore[arg-type]
            config=cfg,
        ),
        count_tokens,
    )


def test_query_is_embedded_once_per_build() -> None:
    turns = _turns()
    src = _Sources([SearchHit(turns[2], 0.9, "messages", ("m2",))], turns)
    _build(src, ContextConfig(temporal_boost=0.3, neighbour_hits=3))
    _build(src, ContextConfig.before())
    assert src.embedded == ["what?", "what?"]


def test_neighbours_bring_the_question_a_reply_answers() -> None:
    turns = _turns()
    turns[3] = _msg("m3", "What did you name the puppy?", turns[3].observed_at)
    src = _Sources([SearchHit(turns[4], 0.9, "messages", ("m4",))], turns)
    assert {it.record_id for it in _build(src, ContextConfig()).items} == {"m4"}
    shown = _build(src, ContextConfig(neighbour_hits=5, question_penalty=0.0)).items
    assert {it.record_id for it in shown} == {"m3", "m4"}
    assert next(it for it in shown if it.record_id == "m3").score == pytest.approx(0.45)
    # the question itself only asks: it comes in below the answer, penalised
    shown = _build(src, ContextConfig(neighbour_hits=5)).items
    assert next(it for it in shown if it.record_id == "m3").score == pytest.approx(0.45 - 0.3)
    # a hit that asks something also brings the turn after it (the answer)
    src = _Sources([SearchHit(turns[3], 0.9, "messages", ("m3",))], turns)
    assert {it.record_id for it in _build(src, ContextConfig(neighbour_hits=5)).items} == {
        "m2",
        "m3",
        "m4",
    }


def test_digests_expand_into_their_turns() -> None:
    turns = _turns()
    summary = _msg("s", "a summary of two turns", T0, rtype="summary", sources=("m1", "m5"))
    src = _Sources(
        [
            SearchHit(turns[0], 0.9, "messages", ("m0",)),
            SearchHit(summary, 0.8, "summaries", ("m1", "m5")),
        ],
        turns,
    )
    keep = {it.record_id for it in _build(src, ContextConfig(digests="keep")).items}
    assert keep == {"m0", "s"}
    expand = _build(src, ContextConfig(digests="expand", digest_weight=0.5)).items
    assert {it.record_id: round(it.score, 2) for it in expand} == {"m0": 0.9, "m1": 0.4, "m5": 0.4}
    assert {it.record_id for it in _build(src, ContextConfig(digests="off")).items} == {"m0"}


def test_temporal_boost_searches_the_period_and_lifts_its_turns() -> None:
    may, june = T0, T0 + timedelta(days=40)
    a = _msg("a", "reading a book in june", june)
    b = _msg("b", "reading a book in may", may)
    src = _Sources(
        [SearchHit(a, 0.9, "messages", ("a",)), SearchHit(b, 0.5, "messages", ("b",))],
        [a, b],
        dated=[SearchHit(b, 0.7, "messages", ("b",))],
    )
    req = ContextRequest(
        Scope("t", "u"),
        "What was I reading in May 2023?",
        4000,
        reserve_ratio=0.0,
        config=ContextConfig(temporal_boost=0.5),
    )
    ctx = build(src, req, count_tokens)  # type: ignore[arg-type]
    assert src.periods[-1] == Period(
        datetime(2023, 5, 1, tzinfo=UTC), datetime(2023, 6, 1, tzinfo=UTC)
    )
    scores = {it.record_id: it.score for it in ctx.items}
    assert scores["b"] == pytest.approx(1.0) and scores["b"] > scores["a"]


def test_compact_dates_write_each_day_once_and_stay_in_budget() -> None:
    turns = _turns(4) + [_msg("late", "next day turn", T0 + timedelta(days=1))]
    hits = [SearchHit(t, 0.9 - i * 0.01, "messages", (t.id,)) for i, t in enumerate(turns)]
    ctx = _build(_Sources(hits, turns), ContextConfig(compact_dates=True))
    memory = ctx.messages[0]["content"]
    assert memory.count("[8 May 2023]") == 1 and memory.count("[9 May 2023]") == 1
    assert "- [8 May 2023]" not in memory
    old = _build(_Sources(hits, turns), ContextConfig(compact_dates=False)).messages[0]["content"]
    assert old.count("[8 May 2023]") == 4
    assert count_tokens(memory) < count_tokens(old)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.text(min_size=1, max_size=80)), min_size=1, max_size=30
    ),
    st.integers(60, 600),
)
def test_grouped_items_never_exceed_the_budget(rows: list[tuple[int, str]], budget: int) -> None:
    items = [
        ContextItem(
            "relevant",
            text,
            "messages",
            1.0 - i * 0.01,
            f"r{i}",
            (f"r{i}",),
            T0 + timedelta(days=day),
            group=f"{day + 8} May 2023",
        )
        for i, (day, text) in enumerate(rows)
    ]
    ctx = assemble(
        plan=allocate(budget, reserve_ratio=0.0),
        system_prompt=None,
        query="q",
        items=items,
        history=[],
        count=count_tokens,
    )
    total = sum(count_tokens(m["content"]) + 4 for m in ctx.messages)
    assert total <= ctx.plan.usable


def test_config_rejects_bad_values() -> None:
    with pytest.raises(ValidationError):
        ContextConfig(facts="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        ContextConfig(neighbour_hits=-1)
    with pytest.raises(ValidationError):
        ContextConfig(session_boost=-0.1)


ANCHOR = datetime(2023, 10, 20, 15, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("What did she do in May 2023?", (2023, 5, 1), (2023, 6, 1)),
        ("What happened last May?", (2023, 5, 1), (2023, 6, 1)),
        ("Where was he in November?", (2022, 11, 1), (2022, 12, 1)),
        ("What did she say on 8 May 2023?", (2023, 5, 8), (2023, 5, 9)),
        ("What did she say on May 8th, 2023?", (2023, 5, 8), (2023, 5, 9)),
        ("What did she paint in 2022?", (2022, 1, 1), (2023, 1, 1)),
        ("王磊在2023年11月读的是哪本书？", (2023, 11, 1), (2023, 12, 1)),
        ("她2023年5月8日说了什么？", (2023, 5, 8), (2023, 5, 9)),
        ("去年5月他去了哪里？", (2022, 5, 1), (2022, 6, 1)),
        ("五月他读了什么书？", (2023, 5, 1), (2023, 6, 1)),
        ("2022年她画了什么？", (2022, 1, 1), (2023, 1, 1)),
    ],
)
def test_dates_in_questions(
    question: str, start: tuple[int, int, int], end: tuple[int, int, int]
) -> None:
    assert resolve_period(question, ANCHOR) == Period(
        datetime(*start, tzinfo=UTC), datetime(*end, tzinfo=UTC)
    )


@pytest.mark.parametrize(
    "question",
    ["two weeks ago", "3天前", "last week", "上周", "昨天", "yesterday", "上个月", "last month"],
)
def test_relative_periods_end_before_the_anchor_and_are_short(question: str) -> None:
    period = resolve_period(question, ANCHOR)
    assert period is not None
    assert period.start < ANCHOR and period.end - period.start <= timedelta(days=31)


@pytest.mark.parametrize(
    "question",
    [
        "When did Caroline go to the support group?",
        "What may happen next?",
        "她喜欢什么颜色？",
        "",
        "in 13 Smarch 2023",
        "2023年13月",
    ],
)
def test_no_date_no_period(question: str) -> None:
    assert resolve_period(question, ANCHOR) is None


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_resolver_never_raises(question: str) -> None:
    period = resolve_period(question, ANCHOR)
    assert period is None or period.start < period.end


def _long_summary(rid: str, sources: tuple[str, ...]) -> MemoryRecord:
    return _msg(rid, "summary of many turns " * 15, T0, rtype="summary", sources=sources)


def _ask(src: _Sources, query: str, cfg: ContextConfig, budget: int = 1000) -> Any:
    req = ContextRequest(Scope("t", "u"), query, budget, reserve_ratio=0.0, config=cfg)
    return build(src, req, count_tokens)  # type: ignore[arg-type]


def test_digest_share_bounds_digests_for_a_detail_question_only() -> None:
    turns = _turns(80)
    summaries = [_long_summary(f"s{i}", (f"x{i}",)) for i in range(3)]
    hits = [
        SearchHit(s, 0.95 - i * 0.01, "summaries", s.source_ids) for i, s in enumerate(summaries)
    ]
    hits += [SearchHit(t, 0.5 - i * 0.001, "messages", (t.id,)) for i, t in enumerate(turns)]
    src = _Sources(hits, turns)
    cfg = ContextConfig(digest_share=0.2, tokens_per_candidate=10)

    def digest_tokens(ctx: Any) -> int:
        return sum(it.tokens for it in ctx.items if it.digest)

    detail = _ask(src, "What did Anna name her puppy?", cfg)
    free = _ask(
        src,
        "What did Anna name her puppy?",
        ContextConfig(tokens_per_candidate=10, digest_share=1.0),
    )
    memory_cap = detail.plan.usable - count_tokens("What did Anna name her puppy?") - 4
    assert 0 < digest_tokens(detail) <= 0.2 * memory_cap
    assert digest_tokens(free) > 0.2 * memory_cap  # before: the summaries took most of it
    turns_shown = sum(1 for it in detail.items if not it.digest)
    assert turns_shown > sum(1 for it in free.items if not it.digest)
    # an overview question keeps the digests' ranked place
    for query in ("Can you summarize what we talked about?", "帮我总结一下我们聊过什么"):
        unbounded = ContextConfig(tokens_per_candidate=10, digest_share=1.0)
        assert digest_tokens(_ask(src, query, cfg)) == digest_tokens(_ask(src, query, unbounded))
    assert detail.tokens <= detail.plan.usable
    # the default bounds digests for detail questions (they took 40-80% of small budgets)
    assert ContextConfig().digest_share < 1.0 == ContextConfig.before().digest_share


def test_asks_overview_in_english_and_chinese() -> None:
    from memstrata.context.budget import asks_overview

    for q in (
        "Summarize our conversation",
        "give me a quick recap",
        "What have we discussed so far?",
        "what did we talk about last week",
        "总结一下",
        "我们上次聊了什么？",
    ):
        assert asks_overview(q), q
    for q in (
        "What did Anna name her puppy?",
        "When did Caroline go to the support group?",
        "小狗叫什么名字？",
        "她什么时候搬家的？",
        "Where does Tom work?",
    ):
        assert not asks_overview(q), q


def test_tokens_per_candidate_sets_how_many_hits_are_asked_for() -> None:
    def limit(cfg: ContextConfig, budget: int) -> int:
        return ContextRequest(Scope("t", "u"), "q", budget, config=cfg).relevant_limit

    assert limit(ContextConfig(tokens_per_candidate=25), 1000) == 40
    assert limit(ContextConfig(tokens_per_candidate=10), 1000) == 100
    assert limit(ContextConfig(tokens_per_candidate=10), 200) == 30  # at least 30
    assert limit(ContextConfig(tokens_per_candidate=1), 100_000) == 300  # at most 300
    with pytest.raises(ValidationError):
        ContextConfig(tokens_per_candidate=0)
    with pytest.raises(ValidationError):
        ContextConfig(digest_share=1.5)


def test_clusters_come_by_similarity_not_through_the_fused_search() -> None:
    turns = _turns(3)
    hits = [SearchHit(t, 0.9 - i * 0.1, "messages", (t.id,)) for i, t in enumerate(turns)]
    src = _Sources(hits, turns)
    src.mid_term = [
        (_msg(f"c{i}", f"cluster digest {i}", T0, rtype="cluster", sources=(f"x{i}",)), 0.9)
        for i in range(5)
    ]
    ctx = _build(src, ContextConfig(clusters=2, cluster_score=0.3))
    assert src.cluster_flags == [False]  # the search left clusters out
    shown = {it.record_id: it for it in ctx.items}
    assert {"c0", "c1"} <= set(shown) and "c2" not in shown
    assert shown["c0"].layer == "mid_term" and shown["c0"].digest
    # they rank below the turns the search found
    assert shown["c0"].score == pytest.approx(0.3)
    assert shown["c0"].score < min(shown[t.id].score for t in turns)
    src = _Sources(hits, turns)
    _build(src, ContextConfig.before())
    assert src.cluster_flags == [True]  # before: clusters competed in the search
