"""The values and rules of quota counters, without I/O (:mod:`memstrata.store.quota_counters`).

A :class:`Take` and a :class:`Refusal` are what every store's counters (sync and async alike)
are asked and answer; the functions decide a take or a lease on current values, and apply
them to a dict for ``memory://``. :mod:`memstrata.store.quota_counters` re-exports them with
the counters' protocol (generated from ``memstrata/_async/store/quota_counters.py``; values
live here so that ``==`` and ``isinstance`` hold across the two APIs).
"""

from __future__ import annotations

import heapq
import re
from collections import OrderedDict
from collections.abc import Iterable, MutableMapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from ..errors import ValidationError

__all__ = [
    "DAYS_KEPT",
    "SWEEP_BATCH",
    "SWEEP_EVERY_US",
    "SWEEP_KEY",
    "SWEEP_ROWS",
    "SWEPT_RANGES",
    "Refusal",
    "Take",
    "CounterFamilies",
    "epoch_us",
    "family_end",
    "is_older",
    "lease_free",
    "lease_in",
    "parse_count",
    "plan_takes",
    "rate_period",
    "stale_at_us",
    "release_in",
    "take_in",
]


@dataclass(frozen=True, slots=True)
class Take:
    """Add ``amount`` to counter ``key`` if it stays ``<= limit`` (``None``: no limit).

    ``ttl_seconds`` is how long the counter matters (a window's end); stores that expire keys
    (Redis) use it.

    ``family`` and ``keep_from`` bound a counter of one period (a day, a rate window) in the
    durable stores (session 29): ``key`` is ``family`` followed by its period, and a take that
    creates ``key``'s row deletes, in the same transaction, the rows of ``family`` whose
    period is older than ``keep_from`` (:func:`is_older`; at most :data:`SWEEP_ROWS` looked
    at). No decision reads them again: a quota reads today's counter, a rate window its own.
    So each family keeps a few rows (the periods from ``keep_from`` on), however long it
    lives, and the work is one range read per new period, never per take."""

    key: str
    amount: int
    limit: int | None = None
    ttl_seconds: int | None = None
    family: str = ""
    keep_from: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not self.key:
            raise ValidationError("a counter key must be a non-empty string")
        if isinstance(self.amount, bool) or not isinstance(self.amount, int):
            raise ValidationError(f"a counter amount must be an integer, got {self.amount!r}")
        if self.family and not (
            self.key.startswith(self.family)
            and self.family.endswith(":")
            and ":" not in self.key[len(self.family) :]
            and self.keep_from
        ):
            raise ValidationError(
                f"a counter family must end with ':' and prefix its key {self.key!r} up to "
                f"the period, with a keep_from period; got {self.family!r}, "
                f"{self.keep_from!r}"
            )

    @property
    def period(self) -> str:
        return self.key[len(self.family) :]


# Rows of a family a sweep reads at most: a family holds 2 or 3 once swept, so this only
# spreads over several new periods the first sweep of rows kept from before session 29.
SWEEP_ROWS = 64


# The store-wide sweep (session 30: ``maintain``'s last step) of the counters a take never
# sweeps again, those of a user or key who never came back: at most SWEEP_BATCH rows of
# ``meta`` looked at per call, from where the last call stopped (kept in SWEEP_KEY's row,
# with when the next pass may start); a pass that reached the end waits SWEEP_EVERY_US
# before the next one starts, so the sweep reads each counter row about once an hour
# whatever the number of ``maintain`` calls.
SWEEP_BATCH = 5_000
SWEEP_EVERY_US = 3_600 * 1_000_000
SWEEP_KEY = "sweep:counters"
# The key ranges of ``meta`` the sweep walks (``family_end`` of each: every key below it).
SWEPT_RANGES = (("quota:", "quota;"), ("rate:", "rate;"))

# The days before today whose counter rows a day's take and the sweep keep (session 31,
# before: 1, yesterday only). A clock stepped forward must not delete the row of a day
# still current by another clock (or by this one once it is stepped back): a day's row is
# kept while that day is within DAYS_KEPT days of the deleting clock's day, so a step of
# up to a week forward and back keeps today's count. A family keeps at most
# DAYS_KEPT + 1 rows, of the days it was counted on.
DAYS_KEPT = 7

_DAY_ROW = re.compile(r"quota:[^:]+:[^:]+:(\d{4}-\d{2}-\d{2})")
_RATE_ROW = re.compile(r"rate:[^:]+:(\d{1,19})")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def rate_period(index: int, window_seconds: float) -> str:
    """The period of a rate window's counter (``rate:<key>:<period>``): the epoch
    microsecond from which it counts nothing any more, the end of the window after it
    (session 30; before, the window's index, which said nothing without the window's
    length). A take of window ``i`` keeps window ``i - 1``'s row: the periods grow with
    the index, so :func:`is_older` orders them as the indexes did."""
    return str(round((index + 2) * window_seconds * 1_000_000))


def stale_at_us(key: str) -> int | None:
    """When the counter row ``key`` stops counting anything (epoch microseconds), else
    None (not a counter of a period). A day's counter (``quota:<kind>:<who>:<day>``) at
    the start of the :data:`DAYS_KEPT` + 1st day after it: a day's take keeps the rows of
    the :data:`DAYS_KEPT` days before it (a process whose clock reads one of them counts
    into it; a clock stepped days forward and back again finds today's count; session 31,
    before: yesterday's only) and deletes older ones. A rate window's
    (``rate:<key>:<period>``, :func:`rate_period`) at its period; a row of the format
    before session 30 (the window's index, a far smaller number) is stale at once."""
    day = _DAY_ROW.fullmatch(key)
    if day is not None:
        try:
            gone = date.fromisoformat(day.group(1)) + timedelta(days=DAYS_KEPT + 1)
        except (ValueError, OverflowError):  # not a date, or the calendar's last days
            return None
        return epoch_us(datetime(gone.year, gone.month, gone.day, tzinfo=UTC))
    rate = _RATE_ROW.fullmatch(key)
    return None if rate is None else int(rate.group(1))


def epoch_us(now: datetime) -> int:
    return (now - _EPOCH) // timedelta(microseconds=1)


def is_older(period: str, keep_from: str) -> bool:
    """Whether ``period`` (a family member's suffix) is before ``keep_from``: whole numbers
    (rate windows, no leading zeros) by value, other periods (ISO days) of the same length
    as text. Anything else (another family's longer key) is never older."""
    if not period or ":" in period:
        return False
    if keep_from.isdigit():
        return period.isdigit() and (len(period), period) < (len(keep_from), keep_from)
    return len(period) == len(keep_from) and period < keep_from


def family_end(family: str) -> str:
    """The first key after every key starting with ``family`` (bytewise, as SQLite's
    BINARY and PostgreSQL's "C" collation order ``meta.key``)."""
    return family[:-1] + chr(ord(family[-1]) + 1)


@dataclass(frozen=True, slots=True)
class Refusal:
    """The take that would have passed its limit: its index in the call and the counter's
    value before the call (nothing was changed)."""

    index: int
    used: int


def parse_count(value: object) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


# --- pure logic on current values ------------------------------------------------------------
def plan_takes(
    used: dict[str, int], takes: Sequence[Take]
) -> tuple[dict[str, int], Refusal | None]:
    after = dict(used)
    for i, t in enumerate(takes):
        value = after.get(t.key, 0)
        if t.limit is not None and value + t.amount > t.limit:
            return used, Refusal(i, used.get(t.key, 0))
        after[t.key] = max(0, value + t.amount)
    return after, None


def lease_free(value: str | None, token: str, now_ms: int) -> bool:
    if value is None:
        return True
    until, _, holder = value.partition(" ")
    return holder == token or parse_count(until) <= now_ms


# --- memory:// (a dict under the caller's lock) ---------------------------------------------
class CounterFamilies:
    """``memory://``'s index of the counters of each family (a dict has no key range to
    read): the keys a take created, per family, the family created last at the end. A
    created key sweeps its family's older periods (:class:`Take`), and each one also looks
    at the family created least recently and forgets its keys that are gone (a purge or
    ``forget_counters`` removed them), so the index holds what ``meta`` holds, no more."""

    def __init__(self) -> None:
        self._keys: OrderedDict[str, set[str]] = OrderedDict()
        # (when it stops counting, key) of every counter row made or loaded: the
        # store-wide sweep's order (:meth:`sweep`); entries of rows already gone are
        # dropped as it passes them, or all at once when they outnumber the rows
        self._ends: list[tuple[int, str]] = []

    def __len__(self) -> int:
        return len(self._keys)

    def loaded(self, meta: MutableMapping[str, str], keys: Iterable[str]) -> None:
        """Counter rows written otherwise than by a take (a dump loaded, ``set_meta``):
        indexed as a take's, so a later take of their family and the sweep delete them
        when their period has passed."""
        for key in keys:
            end = stale_at_us(key)
            if end is None:
                continue
            family = key[: key.rindex(":") + 1]
            self._keys.setdefault(family, set()).add(key)
            self._ended(meta, end, key)

    def _ended(self, meta: MutableMapping[str, str], end: int, key: str) -> None:
        heapq.heappush(self._ends, (end, key))
        if len(self._ends) > 2 * len(meta) + 1024:  # mostly rows gone: start again
            self._ends = [e for e in self._ends if e[1] in meta]
            heapq.heapify(self._ends)

    def sweep(self, meta: MutableMapping[str, str], now_us: int, limit: int) -> int:
        """Delete up to ``limit`` counter rows that stopped counting by ``now_us``
        (:func:`stale_at_us`), the earliest first; how many went. Each entry is looked at
        once: the work is the rows deleted and the entries of rows already gone."""
        ends, deleted = self._ends, 0
        while ends and ends[0][0] <= now_us and deleted < limit:
            _, key = heapq.heappop(ends)
            if meta.pop(key, None) is not None:
                deleted += 1
        return deleted

    def created(self, meta: MutableMapping[str, str], take: Take) -> None:
        keys = self._keys.pop(take.family, set())
        for key in keys - {take.key}:
            if is_older(key[len(take.family) :], take.keep_from):
                meta.pop(key, None)
        self._keys[take.family] = {k for k in keys if k in meta} | {take.key}
        end = stale_at_us(take.key)
        if end is not None:
            self._ended(meta, end, take.key)
        family, held = next(iter(self._keys.items()))
        if family != take.family:
            del self._keys[family]
            alive = {k for k in held if k in meta}
            if alive:
                self._keys[family] = alive


def take_in(
    meta: MutableMapping[str, str],
    takes: Sequence[Take],
    families: CounterFamilies | None = None,
) -> Refusal | None:
    keys = {t.key for t in takes}
    after, refused = plan_takes({k: parse_count(meta.get(k, 0)) for k in keys}, takes)
    if refused is None:
        new = [t for t in takes if t.family and t.key not in meta]
        meta.update({k: str(v) for k, v in after.items()})
        if families is not None:
            for take in new:
                families.created(meta, take)
    return refused


def lease_in(
    meta: MutableMapping[str, str], key: str, token: str, now_ms: int, until_ms: int
) -> bool:
    if not lease_free(meta.get(key), token, now_ms):
        return False
    meta[key] = f"{until_ms} {token}"
    return True


def release_in(meta: MutableMapping[str, str], key: str, token: str) -> None:
    if meta.get(key, "").partition(" ")[2] == token:
        del meta[key]
