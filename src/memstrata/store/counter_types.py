"""The values and rules of quota counters, without I/O (:mod:`memstrata.store.quota_counters`).

A :class:`Take` and a :class:`Refusal` are what every store's counters (sync and async alike)
are asked and answer; the functions decide a take or a lease on current values, and apply
them to a dict for ``memory://``. :mod:`memstrata.store.quota_counters` re-exports them with
the counters' protocol (generated from ``memstrata/_async/store/quota_counters.py``; values
live here so that ``==`` and ``isinstance`` hold across the two APIs).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass

from ..errors import ValidationError

__all__ = [
    "SWEEP_ROWS",
    "Refusal",
    "Take",
    "CounterFamilies",
    "family_end",
    "is_older",
    "lease_free",
    "lease_in",
    "parse_count",
    "plan_takes",
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

    def __len__(self) -> int:
        return len(self._keys)

    def created(self, meta: MutableMapping[str, str], take: Take) -> None:
        keys = self._keys.pop(take.family, set())
        for key in keys - {take.key}:
            if is_older(key[len(take.family) :], take.keep_from):
                meta.pop(key, None)
        self._keys[take.family] = {k for k in keys if k in meta} | {take.key}
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
