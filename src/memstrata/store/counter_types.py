"""The values and rules of quota counters, without I/O (:mod:`memstrata.store.quota_counters`).

A :class:`Take` and a :class:`Refusal` are what every store's counters (sync and async alike)
are asked and answer; the functions decide a take or a lease on current values, and apply
them to a dict for ``memory://``. :mod:`memstrata.store.quota_counters` re-exports them with
the counters' protocol (generated from ``memstrata/_async/store/quota_counters.py``; values
live here so that ``==`` and ``isinstance`` hold across the two APIs).
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass

from ..errors import ValidationError

__all__ = [
    "Refusal",
    "Take",
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
    (Redis) use it, the durable stores keep the row until it is forgotten or purged."""

    key: str
    amount: int
    limit: int | None = None
    ttl_seconds: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not self.key:
            raise ValidationError("a counter key must be a non-empty string")
        if isinstance(self.amount, bool) or not isinstance(self.amount, int):
            raise ValidationError(f"a counter amount must be an integer, got {self.amount!r}")


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
def take_in(meta: MutableMapping[str, str], takes: Sequence[Take]) -> Refusal | None:
    keys = {t.key for t in takes}
    after, refused = plan_takes({k: parse_count(meta.get(k, 0)) for k in keys}, takes)
    if refused is None:
        meta.update({k: str(v) for k, v in after.items()})
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
