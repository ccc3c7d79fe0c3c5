"""Relative dates in a stored turn, resolved against the date it was said, pure.

A turn said on 8 May 2023 that reads "I went to the support group yesterday" is shown as
"I went to the support group yesterday (7 May 2023)": a reader of the context (a model
answering "when did ...") no longer has to do calendar arithmetic, and gets it wrong less.

English: "yesterday", "tomorrow", "the day before yesterday", "the day after tomorrow",
"last night", "last/this past <weekday>", "next <weekday>" (the first one after the day it
was said; weekdays also abbreviated: "last Fri", "last Tues"), "last week/weekend/month/year",
"this past weekend", "next week/month/year", "last/next summer/winter/spring/fall/autumn"
(northern seasons), "last <month>" ("last August": the latest August before the month it was
said in), "on the 17th" (a day of the month it was said in, on or before that day), "N
days/weeks/weekends/months/years ago" (also "few days ago", "two weekends ago").
Chinese: "昨天", "昨晚", "前天", "前晚", "大前天", "明天", "后天", "大后天",
"上周六" / "上星期六" / "上个星期六" (the previous calendar week's), "这周六" / "本周六",
"下周六" / "下个星期六", "上周末", "上周" / "上个星期", "下周" / "下个星期", "上个月", "去年",
"下个月", "明年", "N天前" / "几天前" / "N周前" / "N个月前" / "N年前". "Today" is not annotated:
the line's own date says it. Each expression gets the date once, right after it; nothing else
in the text changes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta

from .dates import MONTH_NAMES, format_date

__all__ = ["annotate_relative_dates", "mentions_relative_date"]

_MONTHS_RE = "|".join(m.lower() for m in MONTH_NAMES)
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# Abbreviations as people type them ("last Fri", "last Tues."); "sun"/"sat" are left out: "last
# sun" is not a date.
_WEEKDAY_ABBR = {
    "mon": 0,
    "tue": 1,
    "tues": 1,
    "wed": 2,
    "thu": 3,
    "thur": 3,
    "thurs": 3,
    "fri": 4,
}
_WD_RE = "|".join([*_WEEKDAYS, *sorted(_WEEKDAY_ABBR, key=len, reverse=True)])
_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a couple of": 2,
    "a few": 3,
    "few": 3,
}
_ZH_NUM = {
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
    "十": 10,
}
_ZH_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_ZH_DAYS = {
    "昨天": -1,
    "昨晚": -1,
    "前天": -2,
    "前晚": -2,
    "大前天": -3,
    "明天": 1,
    "后天": 2,
    "大后天": 3,
}
# Northern-hemisphere meteorological seasons: the months each starts and ends with.
_SEASONS = {
    "spring": (3, 5),
    "summer": (6, 8),
    "fall": (9, 11),
    "autumn": (9, 11),
    "winter": (12, 2),
}

_EN = re.compile(
    r"\b(?:(?P<day2>the\s+day\s+before\s+yesterday|the\s+day\s+after\s+tomorrow)"
    r"|(?P<day>yesterday|tomorrow|last\s+night)"
    r"|(?:last|this past)\s+(?P<wd>" + _WD_RE + r")"
    r"|next\s+(?P<nextwd>" + _WD_RE + r")"
    # "the last week of May", "the last summer of my childhood": not a date relative to now
    r"|(?<!the\s)(?P<dir>last|next|this past)\s+(?P<unit>week(?:end)?|month|year)(?!\s+of\b)"
    # "last August" (not "last May 5th", a date of its own)
    r"|(?<!the\s)last\s+(?P<month>" + _MONTHS_RE + r")(?!\s+\d)"
    r"|(?<!the\s)(?P<sdir>last|next)\s+(?P<season>" + "|".join(_SEASONS) + r")(?!\s+of\b)"
    r"|on\s+the\s+(?P<dom>[1-9]|[12]\d|3[01])(?:st|nd|rd|th)(?!\s+of\b|\s+(?:" + _MONTHS_RE + r"))"
    r"|(?P<n>\d{1,2}|a couple of|a few|few|an?|one|two|three|four|five|six|seven|eight|nine|ten)"
    r"\s+(?P<agounit>day|weekend|week|month|year)s?\s+ago)\b(?!\s*[(（])",
    re.IGNORECASE,
)
_ZH = re.compile(
    r"(?:(?P<day>大前天|大后天|昨天|昨晚|前天|前晚|明天|后天)"
    r"|(?P<which>上个?|这个?|本|下个?)(?:周|星期|礼拜)(?P<wd>[一二三四五六日天])"
    r"|(?P<weekend>上个?周末|上个?星期末)"
    r"|(?P<rel>(?:[上下]个?周|[上下]个?星期|[上下]个?礼拜)(?![一二三四五六日天末])|上个月|下个月|去年|明年)"
    r"|(?P<n>\d{1,2}|[一二两三四五六七八九十几])\s*(?P<agounit>天|周|个?星期|个?月|年)(?:之|以)?前)"
    r"(?!\s*[(（])"
)

# Every expression above contains one of these (a cheap test before the regexes).
_EN_HINTS = ("yesterday", "tomorrow", "last", "past", "next", "ago", "on the")
_ZH_HINTS = ("昨", "前", "明", "后", "上", "下", "这", "本", "去年")
# One scan each for "any hint in the text" (two hundred candidates per build pass here).
_EN_HINT = re.compile("|".join(map(re.escape, _EN_HINTS)))
_ZH_HINT = re.compile("|".join(map(re.escape, _ZH_HINTS)))


_MONTHS_LOWER = [m.lower() for m in MONTH_NAMES]


def _weekday(name: str) -> int:
    name = name.lower()
    return _WEEKDAYS.index(name) if name in _WEEKDAYS else _WEEKDAY_ABBR[name]


def _month_name(when: datetime, zh: bool) -> str:
    return f"{when.year}年{when.month}月" if zh else f"{MONTH_NAMES[when.month - 1]} {when.year}"


def _month_shift(when: datetime, months: int) -> datetime:
    index = when.year * 12 + when.month - 1 + months
    return when.replace(year=index // 12, month=index % 12 + 1, day=1)


def _previous_weekday(when: datetime, weekday: int) -> datetime:
    """The latest ``weekday`` strictly before ``when``'s day."""
    back = (when.weekday() - weekday) % 7 or 7
    return when - timedelta(days=back)


def _week_of(day: datetime, zh: bool, text: str) -> str:
    monday = day - timedelta(days=day.weekday())
    date = format_date(monday, text)
    return f"{date}那周" if zh else f"the week of {date}"


def _shifted(unit: str, n: int, when: datetime, zh: bool, text: str) -> str:
    if unit == "day":
        return format_date(when - timedelta(days=n), text)
    if unit == "week":
        return _week_of(when - timedelta(days=7 * n), zh, text)
    if unit == "month":
        return _month_name(_month_shift(when, -n), zh)
    year = when.year - n
    return f"{year}年" if zh else str(year)


def _season(name: str, ahead: bool, when: datetime) -> str:
    """The latest such season that ended before ``when``'s month, or the first that starts
    after it: "summer 2022", "winter 2022/2023"."""
    first, last = _SEASONS[name]
    index = when.year * 12 + when.month - 1
    step = 1 if ahead else -1
    probe = index + step
    while True:
        year, month = divmod(probe, 12)
        month += 1
        if month == (first if ahead else last):
            break
        probe += step
    if name != "winter":
        return f"{name} {year}"
    start = year if month == 12 else year - 1  # the December that begins that winter
    return f"winter {start}/{start + 1}"


def _english(m: re.Match[str], when: datetime) -> str | None:
    text = ""  # an English phrase gets an English date, whatever else the line holds
    if day := m.group("day2"):
        step = -2 if day.lower().endswith("yesterday") else 2
        return format_date(when + timedelta(days=step), text)
    if day := m.group("day"):
        step = 1 if day.lower() == "tomorrow" else -1
        return format_date(when + timedelta(days=step), text)
    if wd := m.group("wd"):
        return format_date(_previous_weekday(when, _weekday(wd)), text)
    if wd := m.group("nextwd"):
        ahead = (_weekday(wd) - when.weekday()) % 7 or 7
        return format_date(when + timedelta(days=ahead), text)
    if month := m.group("month"):
        if not month[0].isupper():
            return None  # "at last march on", "the last may be": a verb, not the month
        back = (when.month - 1 - _MONTHS_LOWER.index(month.lower())) % 12 or 12
        return _month_name(_month_shift(when, -back), False)
    if season := m.group("season"):
        return _season(season.lower(), m.group("sdir").lower() == "next", when)
    if dom := m.group("dom"):
        if int(dom) > when.day:
            return None  # this month's is still to come, or last month's: unclear
        return format_date(when.replace(day=int(dom)), text)
    if unit := m.group("unit"):
        direction = " ".join(m.group("dir").lower().split())
        sign = 1 if direction == "next" else -1
        unit = unit.lower()
        if direction == "this past" and unit != "weekend":
            return None  # "this past week/year": the last seven days, not a calendar week
        if unit == "weekend":
            if sign > 0:
                return None
            saturday = _previous_weekday(when, 5)
            return f"the weekend of {format_date(saturday, text)}"
        return _shifted(unit, -sign, when, False, text)
    n = m.group("n").lower()
    count = int(n) if n.isdigit() else _WORDS.get(n, 0)
    if count <= 0:
        return None
    unit = m.group("agounit").lower()
    if unit == "weekend":
        saturday = _previous_weekday(when, 5) - timedelta(days=7 * (count - 1))
        return f"the weekend of {format_date(saturday, text)}"
    return _shifted(unit, count, when, False, text)


def _chinese(m: re.Match[str], when: datetime) -> str | None:
    text = "中"  # a Chinese phrase gets a Chinese date
    if day := m.group("day"):
        return format_date(when + timedelta(days=_ZH_DAYS[day]), text)
    this_monday = when - timedelta(days=when.weekday())
    if wd := m.group("wd"):
        # "上周六": the Saturday of the previous calendar week; "这周六" / "本周六" of this
        # week; "下周六" of the next.
        which = m.group("which")[0]
        weeks = {"上": -1, "下": 1}.get(which, 0)
        return format_date(this_monday + timedelta(days=7 * weeks + _ZH_WEEKDAY[wd]), text)
    if m.group("weekend"):
        saturday = this_monday - timedelta(days=2)
        return f"{format_date(saturday, text)}那个周末"
    if rel := m.group("rel"):
        if rel in ("去年", "明年"):
            return f"{when.year + (1 if rel == '明年' else -1)}年"
        if rel in ("上个月", "下个月"):
            return _month_name(_month_shift(when, 1 if rel == "下个月" else -1), True)
        return _week_of(when + timedelta(days=7 if rel.startswith("下") else -7), True, text)
    n = m.group("n")
    count = int(n) if n.isdigit() else _ZH_NUM.get(n, 3 if n == "几" else 0)
    if count <= 0:
        return None
    unit = {"天": "day", "周": "week", "期": "week", "月": "month", "年": "year"}[
        m.group("agounit")[-1]
    ]
    return _shifted(unit, count, when, True, text)


def _within_calendar(
    resolve: Callable[[re.Match[str], datetime], str | None], m: re.Match[str], when: datetime
) -> str | None:
    """``resolve(m, when)``, or ``None`` when the date it means is outside years 1-9999
    ("yesterday" said on 1 January of year 1, "next month" in December 9999: times every
    write accepts): the phrase is then left as it is, as one with no date."""
    try:
        return resolve(m, when)
    except (OverflowError, ValueError):
        return None


def annotate_relative_dates(text: str, said_at: datetime | None) -> str:
    """``text`` with each relative date followed by the date it means when said at
    ``said_at`` ("yesterday (7 May 2023)", "昨天（2023年5月7日）"); unchanged without a date."""
    if said_at is None or not text:
        return text
    english = _EN_HINT.search(text.lower()) is not None
    chinese = _ZH_HINT.search(text) is not None
    if not (english or chinese):
        return text  # most turns: two substring scans instead of two regex passes

    def on_english(m: re.Match[str]) -> str:
        resolved = _within_calendar(_english, m, said_at)
        return m.group(0) if resolved is None else f"{m.group(0)} ({resolved})"

    def on_chinese(m: re.Match[str]) -> str:
        resolved = _within_calendar(_chinese, m, said_at)
        return m.group(0) if resolved is None else f"{m.group(0)}（{resolved}）"

    out = _EN.sub(on_english, text) if english else text
    return _ZH.sub(on_chinese, out) if chinese else out


def mentions_relative_date(text: str) -> bool:
    """Whether ``text`` holds an expression :func:`annotate_relative_dates` resolves
    (whatever its date; context/answer_types.py asks it of every candidate of a "when"
    question)."""
    if _EN_HINT.search(text.lower()) is not None and _EN.search(text) is not None:
        return True
    return _ZH_HINT.search(text) is not None and _ZH.search(text) is not None
