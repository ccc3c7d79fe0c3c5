"""Turns given no ``observed_at`` after the wall clock stepped back (quota31).

A turn without ``observed_at`` took the clock's now, so after the wall clock was set back
(NTP, a VM resumed) the next turn sorted before the ones said just before it: in the
context, the episode and ``list``. ``add_messages`` reads the session's newest turn anyway
(its reply terms), so such a turn is now dated ``max(now, newest + 1 µs)``; a caller's own
``observed_at`` is kept as given. Every store (the suite's ``mem``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memstrata import FixedClock, Memory, Message, Scope
from memstrata.filters import Filters
from memstrata.records import RecordType, Role

TURNS = Filters(types=frozenset({RecordType.MESSAGE}))


def _said(mem: Memory, scope: Scope) -> list[str]:
    return [r.text for r in mem.list(scope, filters=TURNS, limit=10, newest_first=False)]


def test_a_turn_after_the_clock_stepped_back_follows_the_session(
    mem: Memory, clock: FixedClock, alice: Scope
) -> None:
    mem.add_message(alice, "user", "My sister Ruth lives in Oslo.")
    first = mem.add_message(alice, "assistant", "Noted: Ruth lives in Oslo.")
    clock.set(clock.now() - timedelta(hours=1))  # the wall clock steps back an hour
    late = mem.add_message(alice, "user", "She moved to Bergen last week.")
    assert late.observed_at == first.observed_at + timedelta(microseconds=1)
    stored = mem.get(alice, late.id)
    assert stored is not None and stored.observed_at == late.observed_at
    assert _said(mem, alice) == [
        "My sister Ruth lives in Oslo.",
        "Noted: Ruth lives in Oslo.",
        "She moved to Bergen last week.",
    ]
    text = mem.build_context(alice, "where does Ruth live?", token_budget=2000).text
    assert text.index("Noted: Ruth lives in Oslo.") < text.index("She moved to Bergen")
    # the clock catches up: the next turn takes its own now again
    clock.set(clock.now() + timedelta(hours=2))
    after = mem.add_message(alice, "assistant", "Bergen it is.")
    assert after.observed_at == clock.now()


def test_a_callers_time_is_kept(mem: Memory, clock: FixedClock, alice: Scope) -> None:
    mem.add_message(alice, "user", "Today I started the new job.")
    earlier = datetime(2025, 6, 1, 9, tzinfo=UTC)
    back = mem.add_message(alice, "user", "Last June I quit the old one.", observed_at=earlier)
    assert back.observed_at == earlier
    assert _said(mem, alice)[0] == "Last June I quit the old one."


def test_several_turns_of_one_call_after_a_step_back(
    mem: Memory, clock: FixedClock, alice: Scope
) -> None:
    mem.add_message(alice, "user", "first")
    clock.set(clock.now() - timedelta(days=1))
    mem.add_messages(
        alice,
        [Message(role=Role.USER, content="second"), Message(role=Role.ASSISTANT, content="third")],
    )
    assert _said(mem, alice) == ["first", "second", "third"]


def test_a_turn_dated_far_ahead_by_a_caller_does_not_pull_the_next_ones(
    mem: Memory, clock: FixedClock, alice: Scope
) -> None:
    """A newest turn more than ``STEP_BACK`` (2 days) ahead of the clock was dated by its
    caller (a future date, a typo), not said a moment ago: later turns keep the clock's
    time instead of all following it (the lead, session 31)."""
    ahead = clock.now() + timedelta(days=30)
    mem.add_message(alice, "user", "Reminder for next month.", observed_at=ahead)
    now = mem.add_message(alice, "user", "What did I say today?")
    assert now.observed_at == clock.now()


def test_a_new_session_after_the_clock_stepped_back_follows_the_last(
    mem: Memory, clock: FixedClock, alice: Scope
) -> None:
    """The user's newest turn of any session counts too (the lead, session 31): dated after
    its own session only, the next session's first turn led the last session's turns
    (``tests/layers/test_fact_left_values.py`` found it: a fact said there was taken as
    an earlier value)."""
    first = mem.add_message(alice, "user", "I live in Lyon.")
    clock.set(clock.now() - timedelta(minutes=5))
    other = Scope(alice.tenant, alice.user, session="another")
    late = mem.add_message(other, "user", "We moved to Oslo.")
    assert late.observed_at == first.observed_at + timedelta(microseconds=1)
