"""More relative dates resolved in shown turns, and three that were resolved wrongly.

Found in LoCoMo's evidence turns and checked against the date each expression means when it
is said: "the day before yesterday" was shown as yesterday's date, "大前天" as 前天's, and
"上周末" was split in two ("上周（…那周）末"); "last night", "next Saturday", "last summer",
"on the 17th", "few days ago", "昨晚", "后天", "这周六", "下周六", "下周", "几天前" were not
resolved at all.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memstrata.context.relative import annotate_relative_dates

MONDAY = datetime(2023, 6, 26, 10, 0, tzinfo=UTC)  # a Monday
SATURDAY = datetime(2023, 8, 19, 18, 0, tzinfo=UTC)
SUNDAY = datetime(2022, 9, 4, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "said", "expected"),
    [
        # wrong before
        (
            "the aquarium I bought the day before yesterday",
            MONDAY,
            "the aquarium I bought the day before yesterday (24 June 2023)",
        ),
        ("see you the day after tomorrow", MONDAY, "see you the day after tomorrow (28 June 2023)"),
        ("大前天我去了医院", MONDAY, "大前天（2023年6月23日）我去了医院"),
        ("上周末我们去爬山了", MONDAY, "上周末（2023年6月24日那个周末）我们去爬山了"),
        # not resolved before
        (
            "Had a great night out last night!",
            MONDAY,
            "Had a great night out last night (25 June 2023)!",
        ),
        (
            "we are going to a game next Sunday",
            SUNDAY,
            "we are going to a game next Sunday (11 September 2022)",
        ),
        ("let's paint next Saturday", MONDAY, "let's paint next Saturday (1 July 2023)"),
        (
            "on vacation last summer in Bogota",
            MONDAY,
            "on vacation last summer (summer 2022) in Bogota",
        ),
        ("a reunion next summer", MONDAY, "a reunion next summer (summer 2024)"),
        ("skiing last winter", MONDAY, "skiing last winter (winter 2022/2023)"),
        (
            "I bought a console on the 17th",
            SATURDAY,
            "I bought a console on the 17th (17 August 2023)",
        ),
        ("started classes few days ago", MONDAY, "started classes few days ago (23 June 2023)"),
        ("我昨晚去看了电影", MONDAY, "我昨晚（2023年6月25日）去看了电影"),
        ("后天见", MONDAY, "后天（2023年6月28日）见"),
        ("这周六我们去野餐", MONDAY, "这周六（2023年7月1日）我们去野餐"),
        ("下周六见", MONDAY, "下周六（2023年7月8日）见"),
        ("下周我很忙", MONDAY, "下周（2023年7月3日那周）我很忙"),
        ("几天前我开始学画画", MONDAY, "几天前（2023年6月23日）我开始学画画"),
    ],
)
def test_resolved(text: str, said: datetime, expected: str) -> None:
    assert annotate_relative_dates(text, said) == expected


JULY_17 = datetime(2023, 7, 17, 10, 0, tzinfo=UTC)  # a Monday


@pytest.mark.parametrize(
    ("text", "said", "expected"),
    [
        # left unresolved in LoCoMo's turns before (ninth session)
        (
            "I just joined a new activist group last Tues.",
            JULY_17,
            "I just joined a new activist group last Tues (11 July 2023).",
        ),
        ("I had a car accident last Fri", JULY_17, "I had a car accident last Fri (14 July 2023)"),
        ("last Wed I quit", JULY_17, "last Wed (12 July 2023) I quit"),
        ("see you next Fri", JULY_17, "see you next Fri (21 July 2023)"),
        (
            "camping this past weekend",
            JULY_17,
            "camping this past weekend (the weekend of 15 July 2023)",
        ),
        (
            "we went two weekends ago",
            JULY_17,
            "we went two weekends ago (the weekend of 8 July 2023)",
        ),
        ("since last August", JULY_17, "since last August (August 2022)"),
        ("since last July", JULY_17, "since last July (July 2022)"),
        ("last January", JULY_17, "last January (January 2023)"),
    ],
)
def test_resolved_ninth_session(text: str, said: datetime, expected: str) -> None:
    assert annotate_relative_dates(text, said) == expected


@pytest.mark.parametrize(
    "text",
    [
        "the party is on the 30th",  # later this month, or last month's: not guessed
        "born on the 3rd of May",  # a date of its own
        "on the 4th July we watch fireworks",
        "this Tuesday I won",  # this past or this coming Tuesday: not guessed
        "the last summer of my childhood",
        "in the last week of May",
        "the next year of school",
        "the last monthly meeting",
        "my last wedding anniversary",
        "at last march on",  # a verb
        "last May 5th",  # a date of its own
        "the last August of the decade",
        "this past week was busy",  # the last seven days, not a calendar week
    ],
)
def test_left_alone(text: str) -> None:
    assert annotate_relative_dates(text, MONDAY) == text


def test_resolved_once() -> None:
    once = annotate_relative_dates("last night, next Friday, 上周末 and 下周六", MONDAY)
    assert once.count("(") == 2 and once.count("（") == 2
    assert annotate_relative_dates(once, MONDAY) == once
