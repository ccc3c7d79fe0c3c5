"""The user's days in a context: ``ContextConfig(time_zone=...)``.

A store keeps every time in UTC (the offset of an ``observed_at`` the caller gave is not
kept), and ``build_context`` counted days in UTC: a user at +14:00 (Kiritimati) who said
"I went to the dentist yesterday" at 08:00 on 2 May saw the turn dated "1 May 2026 18:00"
and "yesterday" read as "(30 April 2026)"; at -12:00, +05:45 (Kathmandu) or across a DST
change the same, by a day whenever UTC's date is not the user's. A question's period ("on 2
April") was UTC's month too. Session 31's audit: ``ContextConfig.time_zone`` (None: UTC, as
before) is the zone the dates shown, a turn's relative dates and a question's period are
read in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from memstrata import FixedClock, Memory, Scope, ValidationError
from memstrata.context.config import ContextConfig

KIRITIMATI = timezone(timedelta(hours=14))
ALICE = Scope("acme", "alice", session="s1")


@pytest.mark.parametrize(
    ("zone", "said", "shown", "meant"),
    [
        (KIRITIMATI, datetime(2026, 5, 2, 8, tzinfo=KIRITIMATI), "2 May 2026 08:00", "1 May 2026"),
        (
            ZoneInfo("Pacific/Kiritimati"),
            datetime(2026, 5, 2, 8, tzinfo=KIRITIMATI),
            "2 May 2026 08:00",
            "1 May 2026",
        ),
        (
            timezone(timedelta(hours=-12)),
            datetime(2026, 5, 2, 18, tzinfo=UTC),  # 06:00 on 2 May there
            "2 May 2026 06:00",
            "1 May 2026",
        ),
        (
            ZoneInfo("Asia/Kathmandu"),  # +05:45
            datetime(2026, 5, 1, 18, 20, tzinfo=UTC),  # 00:05 on 2 May there
            "2 May 2026 00:05",
            "1 May 2026",
        ),
        (
            ZoneInfo("America/New_York"),  # the night DST began: 01:30 EST = 06:30 UTC
            datetime(2026, 3, 8, 6, 30, tzinfo=UTC),
            "8 March 2026 01:30",
            "7 March 2026",
        ),
        (None, datetime(2026, 5, 2, 8, tzinfo=KIRITIMATI), "1 May 2026 18:00", "30 April 2026"),
    ],
)
@pytest.mark.parametrize("mem", ["memory", "sqlite", "postgresql"], indirect=True)
def test_dates_are_the_users(
    mem: Memory, zone: object, said: datetime, shown: str, meant: str
) -> None:
    mem.context_config = ContextConfig(time_zone=zone)  # type: ignore[arg-type]
    mem.add_message(ALICE, "user", "I went to the dentist yesterday", observed_at=said)
    text = mem.build_context(ALICE, "when did I go to the dentist?", token_budget=1500).text
    assert f"[{shown}] user: I went to the dentist yesterday ({meant})" in text, text


def test_a_questions_month_is_the_users() -> None:
    """ "What did I eat in April?" at -12:00: the turn said on the evening of 30 April there
    (1 May in UTC) is in the question's month and boosted; in UTC it was not."""
    west = timezone(timedelta(hours=-12))
    mem = Memory(
        "memory://",
        embedder="hashing",
        background=False,
        clock=FixedClock(datetime(2026, 5, 10, tzinfo=UTC)),
    )
    try:
        for when, food in (((4, 30), "ramen"), ((5, 5), "sushi")):
            mem.add_message(
                ALICE,
                "user",
                f"for dinner I ate {food} at the corner place",
                observed_at=datetime(2026, *when, 20, tzinfo=west),
            )
        for zone, boosted in ((west, ["ramen"]), (None, [])):
            mem.context_config = ContextConfig(time_zone=zone, temporal_boost=5.0)
            context = mem.build_context(ALICE.user_scope, "what did I eat for dinner in April?")
            dinners = [it for it in context.items if "for dinner" in it.text]
            assert len(dinners) == 2, context.items
            # a fused score is at most 1; the boost adds to the ones in the question's month
            assert [it.text.split()[5] for it in dinners if it.score > 1.0] == boosted, dinners
    finally:
        mem.close()


def test_a_time_zone_that_is_none() -> None:
    with pytest.raises(ValidationError, match="time_zone must be a datetime.tzinfo"):
        ContextConfig(time_zone="Europe/Paris")  # type: ignore[arg-type]
