"""Quotas per tenant and per user (seed 000 §12): records, embeddings per day, context tokens.

A check runs before anything is written, so a refused call changes nothing; the error
(:class:`~memstrata.errors.QuotaExceededError`) names the quota, its limit, what the call
needed and when the quota resets. Counters live in the store's metadata, keyed by a hash of
the scope (never the raw ids), one key per UTC day for embeddings; a user's purge removes
them. The counters are read and written in separate calls: two processes writing for one
user at the same instant may overshoot by one call's worth (documented limitation).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from .errors import QuotaExceededError, ValidationError
from .filters import Filters
from .scope import Scope
from .store.base import Store

__all__ = [
    "Quota",
    "Quotas",
    "check_context",
    "check_writes",
    "count_writes",
    "day_key",
    "next_midnight",
    "set_user_quota",
    "subject_hash",
]


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
    """``per_user`` applies to every user, ``per_tenant`` to each tenant's total
    (embeddings per day and context tokens; records per tenant are not counted yet)."""

    per_user: Quota = Quota()
    per_tenant: Quota = Quota()

    def __post_init__(self) -> None:
        if not isinstance(self.per_user, Quota) or not isinstance(self.per_tenant, Quota):
            raise ValidationError("Quotas(per_user=Quota(...), per_tenant=Quota(...))")


def next_midnight(now: datetime) -> datetime:
    return (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)


def _hash(*parts: str) -> str:
    return hashlib.blake2b(
        "\x00".join(parts).encode(), digest_size=10, person=b"mstr-quota"
    ).hexdigest()


def subject_hash(tenant: str, user: str) -> str:
    """The hash naming one user in quota keys (a purge deletes ``quota:%:<hash>:%``)."""
    return _hash(tenant, user)


def day_key(kind: str, tenant: str, user: str | None, now: datetime) -> str:
    """The meta key of a daily counter (hashed: no raw id in the store's metadata)."""
    who = _hash(tenant, user) if user is not None else _hash(tenant)
    return f"quota:{kind}:{who}:{now.date().isoformat()}"


def check(name: str, limit: int | None, used: int, wanted: int, resets: str) -> None:
    if limit is not None and used + wanted > limit:
        raise QuotaExceededError(
            f"quota {name} exceeded: limit {limit}, used {used}, this call needs {wanted}; "
            f"resets {resets}. Nothing was written."
        )


def _count(store: Store, key: str) -> int:
    value = store.get_meta(key)
    return int(value) if value else 0


def _user_quota(store: Store, quotas: Quotas, scope: Scope) -> Quota:
    raw = store.get_meta(f"quota:user:{subject_hash(scope.tenant, scope.user)}:override")
    if not raw:
        return quotas.per_user
    a, b, c = (None if v == "" else int(v) for v in raw.split(","))
    return Quota(a, b, c)


def check_writes(store: Store, quotas: Quotas, scope: Scope, n: int, now: datetime) -> None:
    """Refuse ``n`` new records (each embedded once) if a quota would be exceeded."""
    if n <= 0:
        return
    user = _user_quota(store, quotas, scope)
    midnight = f"at {next_midnight(now).isoformat()} (UTC midnight)"
    if user.max_records is not None:
        used = store.count(scope.user_scope, Filters(include_deleted=True, include_superseded=True))
        check(
            "max_records (per user)",
            user.max_records,
            used,
            n,
            "when records are purged (forgotten records still count until then)",
        )
    check(
        "embeddings_per_day (per user)",
        user.embeddings_per_day,
        _count(store, day_key("emb", scope.tenant, scope.user, now)),
        n,
        midnight,
    )
    check(
        "embeddings_per_day (per tenant)",
        quotas.per_tenant.embeddings_per_day,
        _count(store, day_key("emb", scope.tenant, None, now)),
        n,
        midnight,
    )


def count_writes(store: Store, scope: Scope, n: int, now: datetime) -> None:
    for key in (
        day_key("emb", scope.tenant, scope.user, now),
        day_key("emb", scope.tenant, None, now),
    ):
        store.set_meta(key, str(_count(store, key) + n))


def check_context(store: Store, quotas: Quotas, scope: Scope, tokens: int) -> None:
    user = _user_quota(store, quotas, scope)
    for name, limit in (
        ("context_tokens (per user)", user.context_tokens),
        ("context_tokens (per tenant)", quotas.per_tenant.context_tokens),
    ):
        check(name, limit, 0, tokens, "with the next request (the limit is per request)")


def set_user_quota(store: Store, quotas: Quotas, scope: Scope, quota: Quota, now: datetime) -> None:
    """Override one user's quota; refused (ValidationError) below what they already use."""
    if not isinstance(quota, Quota):
        raise ValidationError("set_quota needs a memstrata.quotas.Quota")
    if quota.max_records is not None:
        used = store.count(scope.user_scope, Filters(include_deleted=True, include_superseded=True))
        if quota.max_records < used:
            raise ValidationError(
                f"max_records {quota.max_records} is below the {used} records this user "
                "already has; purge some first or choose a limit >= current usage"
            )
    if quota.embeddings_per_day is not None:
        used = _count(store, day_key("emb", scope.tenant, scope.user, now))
        if quota.embeddings_per_day < used:
            raise ValidationError(
                f"embeddings_per_day {quota.embeddings_per_day} is below the {used} already "
                "used today; choose a limit >= current usage"
            )
    value = ",".join(
        "" if v is None else str(v)
        for v in (quota.max_records, quota.embeddings_per_day, quota.context_tokens)
    )
    store.set_meta(f"quota:user:{subject_hash(scope.tenant, scope.user)}:override", value)
