"""Quota values and the pure arithmetic of quota checks: one definition for
``memstrata.quotas`` and ``memstrata._async.quotas`` (see :mod:`memstrata.quotas`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from .clock import END_OF_TIME, later
from .errors import QuotaExceededError, ValidationError
from .scope import Scope
from .store.counter_types import DAYS_KEPT, Take

__all__ = [
    "LEASE_SECONDS",
    "RECORDS_RESET",
    "WAIT_SECONDS",
    "Admission",
    "Quota",
    "Quotas",
    "check",
    "day_family",
    "day_key",
    "day_take",
    "exceeded",
    "lease_key",
    "next_midnight",
    "parse_quota",
    "seconds_to",
    "subject_hash",
]

LEASE_SECONDS = 60.0  # a records lease ends this long after its last renewal
WAIT_SECONDS = 30.0  # how long a writer waits for another's lease before giving up


def _limit(value: object, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(
            f"quota {name} must be an integer >= 1 (or None for no limit), got {value!r}"
        )
    return value


@dataclass(frozen=True, slots=True)
class Quota:
    max_records: int | None = None
    embeddings_per_day: int | None = None
    context_tokens: int | None = None  # per build_context request

    def __post_init__(self) -> None:
        for name in ("max_records", "embeddings_per_day", "context_tokens"):
            _limit(getattr(self, name), name)


@dataclass(frozen=True, slots=True)
class Quotas:
    """``per_user`` applies to every user, ``per_tenant`` to each tenant's total (records,
    embeddings per day; ``context_tokens`` per request either way)."""

    per_user: Quota = Quota()
    per_tenant: Quota = Quota()

    def __post_init__(self) -> None:
        if not isinstance(self.per_user, Quota) or not isinstance(self.per_tenant, Quota):
            raise ValidationError("Quotas(per_user=Quota(...), per_tenant=Quota(...))")


_SPEC_NAMES = {
    "records": "max_records",
    "max_records": "max_records",
    "embeddings_per_day": "embeddings_per_day",
    "embeddings": "embeddings_per_day",
    "context_tokens": "context_tokens",
    "context": "context_tokens",
}


def parse_quota(spec: str) -> Quota:
    """A :class:`Quota` from ``records=1000,embeddings_per_day=5000,context_tokens=4000``
    (any subset; ``records``/``embeddings``/``context`` for short; empty: no limit), as
    ``memstrata serve --user-quota/--tenant-quota`` take it."""
    if not isinstance(spec, str):
        raise ValidationError(f"a quota is a string like 'records=1000', got {spec!r}")
    values: dict[str, int] = {}
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        name, eq, raw = (x.strip() for x in part.partition("="))
        field = _SPEC_NAMES.get(name.lower())
        if field is None or not eq:
            raise ValidationError(
                f"quota item {part!r} is not NAME=NUMBER with NAME one of records, "
                "embeddings_per_day, context_tokens (e.g. records=1000,embeddings_per_day=5000)"
            )
        if field in values:
            raise ValidationError(f"quota {field} is given twice in {spec!r}; give it once")
        try:
            number = int(raw.replace("_", ""))
        except ValueError:
            raise ValidationError(
                f"quota {field}={raw!r} is not a whole number; give an integer >= 1"
            ) from None
        values[field] = _limit(number, field) or 0
    return Quota(**values)


def next_midnight(now: datetime) -> datetime:
    tomorrow = later(now, timedelta(days=1))
    if tomorrow == END_OF_TIME:  # the calendar's last day: its counters last to its end
        return tomorrow
    return tomorrow.replace(hour=0, minute=0, second=0, microsecond=0)


def _hash(*parts: str) -> str:
    return hashlib.blake2b(
        "\x00".join(parts).encode(), digest_size=10, person=b"mstr-quota"
    ).hexdigest()


def subject_hash(tenant: str, user: str) -> str:
    """The hash naming one user in quota keys (a purge deletes ``quota:%:<hash>:%``)."""
    return _hash(tenant, user)


def day_key(kind: str, tenant: str, user: str | None, now: datetime) -> str:
    """The meta key of a daily counter (hashed: no raw id in the store's metadata)."""
    return f"{day_family(kind, tenant, user)}{now.date().isoformat()}"


def day_family(kind: str, tenant: str, user: str | None) -> str:
    """What every daily counter of ``kind`` of one user (or tenant) starts with."""
    who = _hash(tenant, user) if user is not None else _hash(tenant)
    return f"quota:{kind}:{who}:"


def day_take(
    kind: str, tenant: str, user: str | None, now: datetime, amount: int, limit: int | None
) -> Take:
    """A take of today's counter that, when it creates today's row, deletes the rows of
    this counter from more than :data:`~memstrata.store.counter_types.DAYS_KEPT` days
    before today (session 29: a user writing every day for a year kept 365 rows; now at
    most 8). The week before stays: a process whose clock reads behind (a little, or a
    clock stepped days forward and back again) may be taking one of them, and must not
    find it gone and start again from 0 (session 31; before, only yesterday's stayed).
    Nothing reads an older day: a quota is today's, ``set_quota`` checks today's."""
    family = day_family(kind, tenant, user)
    day = now.date()
    try:
        keep_from = day - timedelta(days=DAYS_KEPT)
    except OverflowError:  # the calendar's first week
        keep_from = date.min
    ttl = seconds_to(next_midnight(now), now)
    return Take(f"{family}{day.isoformat()}", amount, limit, ttl, family, keep_from.isoformat())


def exceeded(
    name: str,
    limit: int | None,
    used: int,
    wanted: int,
    resets: str,
    retry_after: int | None = None,
) -> QuotaExceededError:
    return QuotaExceededError(
        f"quota {name} exceeded: limit {limit}, used {used}, this call needs {wanted}; "
        f"resets {resets}. Nothing was written.",
        retry_after=retry_after,
    )


def check(
    name: str,
    limit: int | None,
    used: int,
    wanted: int,
    resets: str,
    retry_after: int | None = None,
) -> None:
    if limit is not None and used + wanted > limit:
        raise exceeded(name, limit, used, wanted, resets, retry_after)


@dataclass(slots=True)
class Admission:
    """What an admission lets its block do: its embeddings always (they are counted), its
    records unless ``refused`` holds the records quota's refusal.

    A block that may end without writing a record (``mem.add`` finding a near duplicate to
    merge into) is admitted even when the records quota is full: it embeds, decides, and
    calls :meth:`records` just before it would write one, which raises that refusal. The
    embedding it computed to decide stays counted (``spent``): a full records quota is not a
    way to have texts embedded without counting them."""

    refused: QuotaExceededError | None = None
    spent: bool = False  # records() refused: the embeddings were used to decide, keep them

    def records(self) -> None:
        """Raise the records quota's refusal, if any: call before writing the records."""
        if self.refused is not None:
            self.spent = True
            raise self.refused


def seconds_to(at: datetime, now: datetime) -> int:
    return max(1, int((at - now).total_seconds()) + 1)


RECORDS_RESET = "when records are purged (forgotten records still count until then)"


def lease_key(scope: Scope, *, tenant_wide: bool) -> str:
    who = _hash(scope.tenant) if tenant_wide else subject_hash(scope.tenant, scope.user)
    return f"quota:lease:{who}:records"
