"""A question naming a date past the calendar, with ``ContextConfig(temporal_boost=...)``
on: "what did I do 999999999 days ago?", "99999999999年前", "9999年12月31日" (its end is in
year 10000), or "yesterday" when the newest hit is on 1 January of year 1. Before session
29 ``context/temporal.resolve_period`` raised a raw ``OverflowError`` / ``ValueError``, and
``build_context`` with it; now such a period is none (no boost), the others unchanged."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata import Memory, Scope
from memstrata.context.config import ContextConfig
from memstrata.context.temporal import resolve_period

PAST = ["999999999 days ago", "99999999999999999999 years ago", "99999999999年前", "9999年12月31日"]
EDGES = [
    datetime(1, 1, 1, tzinfo=UTC),
    datetime(1, 3, 1, tzinfo=timezone(timedelta(hours=14))),
    datetime(2026, 3, 1, tzinfo=UTC),
    datetime(9999, 12, 31, 23, 59, tzinfo=UTC),
]
WORDS = ["yesterday", "last week", "last month", "last year", "去年", "上个月", "昨天", "十二月"]


@pytest.mark.parametrize("anchor", EDGES, ids=lambda a: a.isoformat()[:10])
@pytest.mark.parametrize("phrase", PAST + WORDS)
def test_no_period_past_the_calendar_raises(anchor: datetime, phrase: str) -> None:
    period = resolve_period(f"what happened {phrase}?", anchor)
    assert period is None or period.start < period.end


def test_periods_inside_the_calendar_are_unchanged() -> None:
    anchor = datetime(2026, 3, 1, tzinfo=UTC)
    period = resolve_period("what did I do 3 days ago?", anchor)
    assert period is not None and period.contains(datetime(2026, 2, 26, tzinfo=UTC))
    period = resolve_period("9999年12月30日", anchor)
    assert period is not None and period.start == datetime(9999, 12, 30, tzinfo=UTC)


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(min_value=0, max_value=10**25),
    unit=st.sampled_from(["days", "weeks", "months", "years", "天", "周", "个月", "年"]),
    y=st.integers(min_value=0, max_value=9999),
    m=st.integers(min_value=0, max_value=13),
    anchor=st.datetimes(
        min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
    ),
)
def test_any_count_or_date_resolves_or_is_none(
    n: int, unit: str, y: int, m: int, anchor: datetime
) -> None:
    ago = f"{n} {unit} ago" if unit.isascii() else f"{n}{unit}前"
    for q in (ago, f"{y:04d}年{m}月{m}日", f"{y:04d}年{m}月", f"in May {y:04d}", f"{m}月"):
        resolve_period(q, anchor)


def test_build_context_with_the_temporal_boost(mem: Memory) -> None:
    alice = Scope("acme", "alice", session="s1")
    mem.context_config = ContextConfig(temporal_boost=1.0)
    mem.add_message(alice, "user", "I went to Porto last week")
    for q in PAST:
        built = mem.build_context(alice, f"what did I do {q}?", token_budget=2000)
        assert "Porto" in built.text
