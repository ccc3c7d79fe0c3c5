"""A day's embeddings count survives a wall clock stepped days forward and back (quota31).

The take that made a new day's counter row deleted the counter's rows from before
yesterday, and ``maintain``'s sweep deleted a day's rows from the start of the day after
next: a clock stepped 2+ days forward (a take or a ``maintain`` then) and back again found
today's row gone and counted today from 0 (audit31's finding). A day's rows are now kept
while the day is within a week (:data:`memstrata.quota_types.KEEP_DAYS`) of the clock that
would delete them."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.errors import QuotaExceededError

from .conftest import DAILY


@pytest.mark.parametrize("days", [2, 3, 7])
@pytest.mark.parametrize("then", ["take", "maintain"])
def test_todays_count_survives_a_step_forward_and_back(
    quota_mem: Memory, day_clock: FixedClock, days: int, then: str
) -> None:
    alice, bob = Scope("acme", "alice"), Scope("acme", "bob")
    for i in range(DAILY - 1):
        quota_mem.add(alice, f"alice's note {i} of today")
    today = day_clock.now()
    day_clock.set(today + timedelta(days=days))  # the wall clock steps forward
    if then == "take":
        quota_mem.add(alice, "a note on the stepped clock")  # makes that day's row
        quota_mem.add(bob, "bob writes then too")
    else:
        quota_mem.maintain(alice)
    day_clock.set(today + timedelta(minutes=5))  # and back
    quota_mem.add(alice, "the last one today's quota allows")
    with pytest.raises(QuotaExceededError, match=f"used {DAILY}"):
        quota_mem.add(alice, "one too many today")


def test_a_day_a_week_gone_is_still_swept(quota_mem: Memory, day_clock: FixedClock) -> None:
    """The bound: a take more than a week later still deletes the old day's row (a user
    who writes every day keeps about eight rows, not one a day for ever)."""
    alice = Scope("acme", "alice")
    quota_mem.add(alice, "a note")
    today = day_clock.now()
    day_clock.set(today + timedelta(days=9))
    quota_mem.add(alice, "nine days on")
    day_clock.set(today)
    for i in range(DAILY):
        quota_mem.add(alice, f"counted from 0 again {i}")
