"""A turn said at the ends of the calendar (a time every write accepts: years 1-9999 in
UTC, from a client's clock, an import or ``observed_at``) whose relative date falls outside
it ("yesterday" said on 1 January of year 1, "tomorrow" or "next month" said on 31 December
9999) made every ``build_context`` of its user raise a bare ``OverflowError`` or
``ValueError`` (an HTTP 500): the date could not be resolved. Found by audit26; fixed in
``context/relative.py``: such a phrase is left as it is (as one with no date is)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.context.relative import annotate_relative_dates

FIRST = datetime(1, 1, 1, 0, 30, tzinfo=UTC)
LAST = datetime(9999, 12, 31, 23, 0, tzinfo=UTC)
PAST = [
    "I saw her yesterday",
    "the day before yesterday",
    "we met last night",
    "last Friday was fun",
    "last week was long",
    "last weekend we hiked",
    "two weekends ago",
    "3 days ago",
    "last month was busy",
    "last August",
    "last winter was cold",
    "昨天我们见面了",
    "上周六",
    "上周末",
    "上个月",
    "三天前",
    "上周",
]
FUTURE = [
    "see you tomorrow",
    "the day after tomorrow",
    "next Monday",
    "next week",
    "next month",
    "next summer",
    "明天见",
    "下周六",
    "下个月",
    "下周",
]


@pytest.mark.parametrize(("text", "said"), [(t, FIRST) for t in PAST] + [(t, LAST) for t in FUTURE])
def test_a_date_outside_the_calendar_is_left_unresolved(text: str, said: datetime) -> None:
    out = annotate_relative_dates(text, said)
    assert out.startswith(text[:2])  # the turn's own words, annotated or not


def test_dates_inside_the_calendar_are_still_resolved() -> None:
    assert annotate_relative_dates("see you tomorrow", LAST - timedelta(days=1)) == (
        "see you tomorrow (31 December 9999)"
    )
    assert annotate_relative_dates("I saw her yesterday", FIRST + timedelta(days=1)) == (
        "I saw her yesterday (1 January 1)"
    )


@pytest.mark.parametrize("url", ["memory://", "sqlite"])
def test_build_context_over_turns_said_at_the_ends(url: str, tmp_path) -> None:
    if url == "sqlite":
        url = f"sqlite:///{tmp_path / 'm.db'}"
    session = Scope("acme", "u1", session="s1")
    with Memory(url, embedder="hashing", background=False, clock=FixedClock(LAST)) as mem:
        mem.add_message(session, "user", "I adopted a cat yesterday", observed_at=FIRST)
        far = timezone(timedelta(hours=-14))
        mem.add_message(
            session, "user", "see you tomorrow, and next month", observed_at=LAST.astimezone(far)
        )
        ctx = mem.build_context(session, "when did I adopt the cat?")
    assert "adopted a cat yesterday" in ctx.text
    assert "see you tomorrow" in ctx.text
