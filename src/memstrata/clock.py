"""Injectable clocks: every time memstrata stores is timezone-aware UTC from one of these."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol

from .errors import ValidationError

__all__ = [
    "END_OF_TIME",
    "Clock",
    "FixedClock",
    "SystemClock",
    "UtcClock",
    "ensure_utc",
    "later",
    "utc_clock",
]

# The last instant a datetime (and so a store) holds: 9999-12-31 23:59:59.999999 UTC.
END_OF_TIME = datetime.max.replace(tzinfo=UTC)


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    """The wall clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class FixedClock:
    """A clock that only moves when told to; for tests and replays of old conversations."""

    def __init__(self, start: datetime) -> None:
        self._now = ensure_utc(start)

    def now(self) -> datetime:
        return self._now

    def set(self, when: datetime) -> None:
        self._now = ensure_utc(when)

    def advance(self, **delta: float) -> datetime:
        self._now = self._now + timedelta(**delta)
        return self._now


class UtcClock:
    """A caller's own clock, whose times memstrata takes as :func:`ensure_utc` does: a naive
    time (``datetime.utcnow()``, ``datetime.now()`` of a UTC host) as UTC, an aware one
    in UTC. Every time memstrata stores and compares is aware UTC: a clock returning naive
    times made searches, ``end_session`` and ``maintain`` raise a raw ``TypeError``
    ("can't compare offset-naive and offset-aware datetimes") and stored naive times
    beside aware ones (session 31). Anything else the clock has (``set``, ``advance``) is
    reached through this one."""

    __slots__ = ("clock",)

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def now(self) -> datetime:
        when = self.clock.now()
        if not isinstance(when, datetime):
            raise ValidationError(
                f"the clock {type(self.clock).__name__}.now() returned "
                f"{type(when).__name__}, not a datetime: return datetime.now(UTC)"
            )
        return ensure_utc(when)

    def __getattr__(self, name: str) -> object:
        if name == "clock":  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.clock, name)


def utc_clock(clock: Clock) -> Clock:
    """``clock`` as memstrata uses it: memstrata's own clocks as they are (they give aware
    UTC already), any other in a :class:`UtcClock`."""
    return clock if type(clock) in (SystemClock, FixedClock, UtcClock) else UtcClock(clock)


def ensure_utc(when: datetime) -> datetime:
    """Return ``when`` as an aware UTC datetime; naive values are taken to be UTC."""
    if when.tzinfo is None:
        return when.replace(tzinfo=UTC)
    return when.astimezone(UTC)


def later(when: datetime, delta: timedelta) -> datetime:
    """``when + delta``, or :data:`END_OF_TIME` when that is past the calendar's end: what is
    scheduled after now (a job's retry, a lease, the next maintenance, a daily quota's
    reset, ``flush``'s horizon) stops there instead of raising ``OverflowError`` with a
    clock in the last days of year 9999 (a time every write accepts)."""
    try:
        return when + delta
    except OverflowError:
        return END_OF_TIME
