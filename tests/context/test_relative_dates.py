"""Relative dates in shown turns resolved against the date they were said (relative.py)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata import Content, MemoryRecord, Scope
from memstrata.context.builder import ContextRequest, build
from memstrata.context.config import ContextConfig
from memstrata.context.relative import annotate_relative_dates
from memstrata.context.standing import Standing
from memstrata.search.hit import SearchHit
from memstrata.tokens import count_tokens

MONDAY = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)
SUNDAY = datetime(2023, 5, 14, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "said", "expected"),
    [
        ("I went to the group yesterday.", MONDAY, "I went to the group yesterday (7 May 2023)."),
        ("See you tomorrow", MONDAY, "See you tomorrow (9 May 2023)"),
        ("Last Saturday we hiked.", MONDAY, "Last Saturday (6 May 2023) we hiked."),
        # Said on a Sunday, "last Sunday" is a week before, not the same day.
        ("last Sunday was quiet", SUNDAY, "last Sunday (7 May 2023) was quiet"),
        ("We moved last year.", MONDAY, "We moved last year (2022)."),
        (
            "last month I quit",
            datetime(2023, 1, 20, tzinfo=UTC),
            "last month (December 2022) I quit",
        ),
        (
            "next month I start",
            datetime(2023, 12, 2, tzinfo=UTC),
            "next month (January 2024) I start",
        ),
        ("3 days ago", MONDAY, "3 days ago (5 May 2023)"),
        ("two weeks ago I ran", MONDAY, "two weeks ago (the week of 24 April 2023) I ran"),
        ("last week I painted", MONDAY, "last week (the week of 1 May 2023) I painted"),
        ("last weekend was fun", MONDAY, "last weekend (the weekend of 6 May 2023) was fun"),
        ("我昨天去了医院", MONDAY, "我昨天（2023年5月7日）去了医院"),
        ("前天下雨", MONDAY, "前天（2023年5月6日）下雨"),
        ("上周六我们去爬山", MONDAY, "上周六（2023年5月6日）我们去爬山"),
        ("上个月我换了工作", MONDAY, "上个月（2023年4月）我换了工作"),
        ("去年我们搬家了", MONDAY, "去年（2022年）我们搬家了"),
        ("三天前", MONDAY, "三天前（2023年5月5日）"),
        ("上周我很忙", MONDAY, "上周（2023年5月1日那周）我很忙"),
        # The line's own date says "today"; no relative word, no change.
        ("today I did it", MONDAY, "today I did it"),
        ("The weekly meeting is on Monday.", MONDAY, "The weekly meeting is on Monday."),
        ("Yesterday's news", None, "Yesterday's news"),
    ],
)
def test_resolved(text: str, said: datetime | None, expected: str) -> None:
    assert annotate_relative_dates(text, said) == expected


def test_already_resolved_text_is_left_alone() -> None:
    once = annotate_relative_dates("I ran yesterday and 上个月 too", MONDAY)
    assert annotate_relative_dates(once, MONDAY) == once


_WORDS = st.sampled_from(
    [
        "yesterday",
        "last",
        "week",
        "Saturday",
        "ago",
        "2",
        "days",
        "month",
        "next",
        "year",
        "昨天",
        "上周六",
        "去年",
        "三天前",
        "上个月",
        "(",
        "）",
        "weekend",
        "a",
        "few",
        "the",
        "I",
        ".",
        " ",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_WORDS, max_size=12).map(" ".join) | st.text(max_size=80),
    st.datetimes(min_value=datetime(1900, 3, 1), max_value=datetime(2200, 1, 1)),
)
def test_only_adds_dates_and_never_raises(text: str, said: datetime) -> None:
    out = annotate_relative_dates(text, said.replace(tzinfo=UTC))
    # Removing what was inserted gives the text back: nothing of it changed or went missing.
    stripped = re.sub(
        r" \((?:the week of |the weekend of )?[^()]*\d{4}\)|（[^（）]*年[^（）]*）", "", out
    )
    assert stripped == text
    assert annotate_relative_dates(out, said.replace(tzinfo=UTC)) == out


def _turn(rid: str, text: str, when: datetime) -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        tenant="t",
        user="u",
        type="message",
        content=Content(text),
        created_at=when,
        updated_at=when,
        observed_at=when,
        session="s1",
        source_ids=(rid,),
    )


class _OneHit:
    def __init__(self, rec: MemoryRecord) -> None:
        self.rec = rec

    def standing(self, scope: Scope, user_scope: Scope, summaries: int | None) -> Standing:
        return Standing()

    def embed_query(self, scope: Scope, query: str) -> list[float]:
        return [1.0]

    def facts(self, scope: Scope, vector: object, limit: int) -> list[tuple[MemoryRecord, float]]:
        return []

    def relevant(
        self,
        scope: Scope,
        query: str,
        limit: int,
        vector: object,
        *,
        facts: bool = False,
        period: object = None,
        clusters: bool = True,
    ) -> list[SearchHit]:
        return [SearchHit(self.rec, 1.0, "messages", (self.rec.id,))]

    def clusters(
        self, scope: Scope, vector: object, limit: int
    ) -> list[tuple[MemoryRecord, float]]:
        return []

    def records(self, scope: Scope, ids: object) -> list[MemoryRecord]:
        return []

    def shown(self, scope: Scope, records: object) -> None:
        pass

    def ranked(self, scope, query, limit, vector, *, facts, clusters):  # type: ignore[no-untyped-def]
        from memstrata.search.hybrid import RankedHits

        hits = self.relevant(scope, query, limit, vector, facts=facts, clusters=clusters)
        return RankedHits.of(scope, hits)

    def neighbours(self, scope: Scope, record: MemoryRecord, after: bool) -> list[MemoryRecord]:
        return []


@pytest.mark.parametrize("on", [True, False])
def test_context_shows_the_resolved_date_when_asked(on: bool) -> None:
    said = MONDAY - timedelta(days=30)
    src = _OneHit(_turn("m1", "I adopted a cat last Saturday.", said))
    ctx = build(
        src,
        ContextRequest(
            Scope("t", "u"),
            "when was the cat adopted?",
            500,  # type: ignore[arg-type]
            reserve_ratio=0.0,
            config=ContextConfig(resolve_dates=on),
        ),
        count_tokens,
    )
    memory = ctx.messages[0]["content"]
    assert ("last Saturday (1 April 2023)" in memory) is on
    assert "I adopted a cat last Saturday" in memory
    assert ctx.tokens <= 500


def test_default_context_of_a_real_memory_resolves_relative_dates() -> None:
    from memstrata import Memory

    with Memory("memory://", embedder="hashing", background=False) as mem:
        alice = Scope("t", "alice")
        mem.add(
            alice,
            "Alice: I went to the pottery class yesterday.",
            type="message",
            observed_at=MONDAY,
        )
        mem.add(alice, "Alice: 我上个月开始学陶艺。", type="message", observed_at=MONDAY)
        ctx = mem.build_context(alice, "When did Alice go to the pottery class?", token_budget=2000)
        assert "yesterday (7 May 2023)" in ctx.text
        assert "上个月（2023年4月）" in ctx.text
        # What is stored is what was said: only the context shows the resolved date.
        texts = {h.record.text for h in mem.search(alice, "pottery class", top_k=5)}
        assert "Alice: I went to the pottery class yesterday." in texts
