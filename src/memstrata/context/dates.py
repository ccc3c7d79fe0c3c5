"""Dates as a reader of the context expects them: in the language of the line they stamp.

An LLM answering "when did ..." copies the date it sees; ``8 May 2023`` (or
``2023年5月8日`` beside Chinese text) is what a person would write in the answer, where an
ISO date would have to be translated first.
"""

from __future__ import annotations

import re
from datetime import datetime

__all__ = ["MONTH_NAMES", "format_date", "format_datetime"]

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
MONTH_NAMES = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def format_date(when: datetime, text: str = "") -> str:
    if _CJK.search(text):
        return f"{when.year}年{when.month}月{when.day}日"
    return f"{when.day} {MONTH_NAMES[when.month - 1]} {when.year}"


def format_datetime(when: datetime, text: str = "") -> str:
    return f"{format_date(when, text)} {when.strftime('%H:%M')}"
