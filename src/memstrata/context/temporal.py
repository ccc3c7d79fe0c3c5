"""Dates named in a question, resolved to a period against an anchor date, pure.

English: "in May 2023", "May 2023", "in May" / "last May" (the latest May on or before the
anchor), "on 8 May 2023" / "May 8, 2023", "in 2023", "last year", "last month", "last week",
"yesterday", "N days/weeks/months ago". Chinese: "2023年5月8日", "2023年5月", "5月" / "五月",
"去年", "上个月", "上周" / "上个星期", "昨天", "N天前" / "N周前" / "N个月前".

The anchor is the newest date the memory has seen (imported conversations keep their own
dates, so the wall clock would be wrong for them). The first expression found wins; a
question without one resolves to ``None``.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = ["Period", "resolve_period"]

_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_MONTHS.update({m.lower(): i for i, m in enumerate(calendar.month_abbr) if m})
_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ZH_NUM = {
    "一": 1,
    "二": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
    "十": 10,
    "十一": 11,
    "十二": 12,
    "两": 2,
}
_ZH_N = r"(\d{1,2}|十[一二]?|[一二三四五六七八九两])"

_EN_DAY_MONTH_YEAR = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH_RE})\.?,?\s+(\d{{4}})\b", re.I
)
_EN_MONTH_DAY_YEAR = re.compile(
    rf"\b({_MONTH_RE})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I
)
_EN_MONTH_YEAR = re.compile(rf"\b({_MONTH_RE})\.?,?\s+(?:of\s+)?(\d{{4}})\b", re.I)
_EN_LAST_MONTH_NAME = re.compile(rf"\b(?:last|in|during|this past)\s+({_MONTH_RE})\b", re.I)
_EN_YEAR = re.compile(r"\b(?:in|during|of)\s+((?:19|20)\d{2})\b", re.I)
_EN_AGO = re.compile(
    r"\b(\d+|a|an|one|two|three|four|five|six)\s+(day|week|month|year)s?\s+ago\b", re.I
)
_EN_LAST = re.compile(r"\b(yesterday|last\s+(?:week|month|year|weekend))\b", re.I)
_EN_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}

_ZH_DATE = re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]")
_ZH_MONTH_YEAR = re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月")
_ZH_MONTH = re.compile(rf"(?:去年)?{_ZH_N}\s*月(?!\s*\d)")
_ZH_YEAR = re.compile(r"(\d{4})\s*年")
_ZH_AGO = re.compile(rf"{_ZH_N}\s*(天|周|个?星期|个?月|年)(?:之)?前")
_ZH_REL = re.compile(r"(昨天|上个?周|上个?星期|上个月|去年)")


@dataclass(frozen=True, slots=True)
class Period:
    start: datetime  # inclusive
    end: datetime  # exclusive

    def contains(self, when: datetime) -> bool:
        return self.start <= when < self.end


def _day(y: int, m: int, d: int, anchor: datetime) -> Period | None:
    try:
        start = anchor.replace(year=y, month=m, day=d, hour=0, minute=0, second=0, microsecond=0)
    except ValueError:
        return None
    return Period(start, start + timedelta(days=1))


def _month(y: int, m: int, anchor: datetime) -> Period | None:
    if not 1 <= m <= 12:
        return None
    start = anchor.replace(year=y, month=m, day=1, hour=0, minute=0, second=0, microsecond=0)
    end = start.replace(year=y + (m == 12), month=m % 12 + 1)
    return Period(start, end)


def _latest_month(m: int, anchor: datetime) -> Period | None:
    """The latest month ``m`` that starts on or before the anchor."""
    year = anchor.year if m <= anchor.month else anchor.year - 1
    return _month(year, m, anchor)


def _year(y: int, anchor: datetime) -> Period:
    start = anchor.replace(year=y, month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    return Period(start, start.replace(year=y + 1))


def _back(unit: str, n: int, anchor: datetime) -> Period:
    """A window around ``n`` units before the anchor (half a unit either side, ≥ 1 day)."""
    days = {"day": 1, "week": 7, "month": 30, "year": 365}[unit]
    centre = anchor - timedelta(days=days * n)
    half = timedelta(days=max(1.0, days / 2))
    return Period(centre - half, centre + half)


def _zh_int(text: str) -> int:
    return int(text) if text.isdigit() else _ZH_NUM.get(text, 0)


def _english(q: str, anchor: datetime) -> Period | None:
    if m := _EN_DAY_MONTH_YEAR.search(q):
        return _day(int(m.group(3)), _MONTHS[m.group(2).lower()], int(m.group(1)), anchor)
    if m := _EN_MONTH_DAY_YEAR.search(q):
        return _day(int(m.group(3)), _MONTHS[m.group(1).lower()], int(m.group(2)), anchor)
    if m := _EN_MONTH_YEAR.search(q):
        return _month(int(m.group(2)), _MONTHS[m.group(1).lower()], anchor)
    if m := _EN_LAST_MONTH_NAME.search(q):
        return _latest_month(_MONTHS[m.group(1).lower()], anchor)
    if m := _EN_YEAR.search(q):
        return _year(int(m.group(1)), anchor)
    if m := _EN_AGO.search(q):
        n = m.group(1).lower()
        return _back(m.group(2).lower(), int(n) if n.isdigit() else _EN_WORDS[n], anchor)
    if m := _EN_LAST.search(q):
        word = m.group(1).lower().split()[-1]
        unit = {"yesterday": "day", "weekend": "week"}.get(word, word)
        return _back(unit, 1, anchor)
    return None


def _chinese(q: str, anchor: datetime) -> Period | None:
    if m := _ZH_DATE.search(q):
        return _day(int(m.group(1)), int(m.group(2)), int(m.group(3)), anchor)
    if m := _ZH_MONTH_YEAR.search(q):
        return _month(int(m.group(1)), int(m.group(2)), anchor)
    if m := _ZH_MONTH.search(q):
        month = _zh_int(m.group(1))
        if m.group(0).startswith("去年"):
            return _month(anchor.year - 1, month, anchor)
        return _latest_month(month, anchor) if 1 <= month <= 12 else None
    if m := _ZH_YEAR.search(q):
        return _year(int(m.group(1)), anchor)
    if m := _ZH_AGO.search(q):
        unit = {"天": "day", "周": "week", "期": "week", "月": "month", "年": "year"}[
            m.group(2)[-1]
        ]
        return _back(unit, _zh_int(m.group(1)), anchor)
    if m := _ZH_REL.search(q):
        word = m.group(1)
        if word == "去年":
            return _year(anchor.year - 1, anchor)
        unit = "day" if word == "昨天" else "month" if "月" in word else "week"
        return _back(unit, 1, anchor)
    return None


def resolve_period(question: str, anchor: datetime) -> Period | None:
    """The period a question names, resolved against ``anchor``; ``None`` when none, and
    when it reaches past the calendar (years 1-9999): "999999999 days ago", "99999999999年前",
    "9999年12月31日" (whose end is in year 10000), "yesterday" on 1 January of year 1. Before
    session 29 those raised a raw OverflowError / ValueError out of ``build_context`` with
    ``temporal_boost`` on."""
    try:
        return _chinese(question, anchor) or _english(question, anchor)
    except (OverflowError, ValueError):  # date arithmetic past datetime's range only
        return None
