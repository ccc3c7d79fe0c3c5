"""Injectable clocks: every time memstrata stores is timezone-aware UTC from one of these."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol

__all__ = ["END_OF_TIME", "Clock", "FixedClock", "SystemClock", "ensure_utc", "later"]

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
