"""Quotas per tenant and per user (seed 000 §12): records, embeddings per day, context tokens.

A check runs before anything is written, so a refused call changes nothing; the error
(:class:`~memstrata.errors.QuotaExceededError`) names the quota, its limit, what the call
needed and when the quota resets.

**Atomic across processes.** :func:`admit_writes` checks and counts in one step, so any
number of processes (API servers, workers) writing for one user never admit more than a
limit between them:

- embeddings per day (per user and per tenant) are counters taken all-or-nothing with
  :meth:`~memstrata.store.quota_counters.QuotaCounters.take_counters` (SQLite: one
  ``BEGIN IMMEDIATE`` transaction; PostgreSQL: row locks; with ``buffer=redis://...`` a
  Redis mirror answers refusals first and the durable counters stay the authority). A call
  that fails after its take gives the take back.
- records per user and per tenant count the store's own records (every type, deleted and
  superseded ones included, until they are purged), so the check and the write run under a
  lease (:meth:`~memstrata.store.quota_counters.QuotaCounters.lease`, in the durable
  store): the next writer counts only after the previous one committed. The lease is the
  tenant's when the tenant has a records limit (its users' writes then queue behind each
  other), else the user's. A thread renews it every ``LEASE_SECONDS / 3`` while the batch
  runs, so a batch slower than one lease keeps it; a holder that dies frees it after
  ``LEASE_SECONDS``.

Counters live in the store's metadata, keyed by a hash of the scope (never the raw ids), one
key per UTC day for embeddings; a user's purge removes them (and their Redis mirrors).
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from .errors import QuotaExceededError, StoreError, ValidationError
from .filters import Filters
from .scope import Scope
from .store.base import Store
from .store.quota_counters import QuotaCounters, Take

__all__ = [
    "LEASE_SECONDS",
    "Quota",
    "Quotas",
    "admit_writes",
    "check_context",
    "check_writes",
    "day_key",
    "next_midnight",
    "parse_quota",
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


def _count(store: Store, key: str) -> int:
    return counters_of(store).counter_values([key])[key]


def _user_quota(store: Store, quotas: Quotas, scope: Scope) -> Quota:
    raw = store.get_meta(f"quota:user:{subject_hash(scope.tenant, scope.user)}:override")
    if not raw:
        return quotas.per_user
    a, b, c = (None if v == "" else int(v) for v in raw.split(","))
    return Quota(a, b, c)


LEASE_SECONDS = 60.0  # a records lease ends this long after its last renewal
WAIT_SECONDS = 30.0  # how long a writer waits for another's lease before giving up

log = logging.getLogger("memstrata.quotas")


def counters_of(store: Store) -> QuotaCounters:
    if not isinstance(store, QuotaCounters):
        raise StoreError(
            f"the store {store.url} keeps no quota counters (take_counters, lease); use "
            "sqlite://, postgresql:// or memory://, or open Memory without quotas="
        )
    return store


class _Renewer(threading.Thread):
    """Renews a held lease every third of ``LEASE_SECONDS`` until stopped, so a batch that
    takes longer than one lease (a slow embedder, a huge import) keeps its place: nobody
    else counts and writes while it has not committed. A renewal that finds the lease taken
    (this process stalled past the whole lease) is logged as an error."""

    def __init__(self, counters: QuotaCounters, key: str, token: str, seconds: float) -> None:
        super().__init__(name=f"memstrata-lease-{key}", daemon=True)
        self._counters, self._key, self._token, self._seconds = counters, key, token, seconds
        self._halt = threading.Event()
        self.renewals = 0
        self.lost = False

    def run(self) -> None:
        while not self._halt.wait(self._seconds / 3):
            now_ms = int(time.time() * 1000)
            try:
                held = self._counters.lease(
                    self._key, self._token, now_ms, now_ms + int(self._seconds * 1000)
                )
            except Exception as exc:  # a store hiccup: the lease still runs; try again
                log.warning("could not renew quota lease %s (%s); retrying", self._key, exc)
                continue
            if held:
                self.renewals += 1
            elif not self.lost:
                self.lost = True
                log.error(
                    "quota lease %s was taken by another writer while this batch ran (the "
                    "process stalled over %.0f s): the records quota may be exceeded",
                    self._key,
                    self._seconds,
                )

    def stop(self) -> None:
        self._halt.set()
        self.join()


_held = threading.local()  # leases this thread holds, with the records admitted under them


@dataclass(slots=True)
class _Lease:
    pending: int = 0  # records admitted under it and not yet written (nested admissions)


@contextmanager
def _records_lease(counters: QuotaCounters, key: str, *, wait: float) -> Iterator[_Lease]:
    """Hold ``key`` for the block (renewed while it runs). Re-entrant in one thread: a
    nested admission (an import of several users of one tenant) shares the lease and sees
    what the outer one admitted (``pending``) instead of waiting for itself."""
    held: dict[tuple[int, str], _Lease] = _held.__dict__.setdefault("leases", {})
    mine = (id(counters), key)
    if mine in held:
        yield held[mine]
        return
    token = secrets.token_hex(12)
    seconds = LEASE_SECONDS
    deadline = time.monotonic() + wait
    pause = 0.002
    while True:
        now_ms = int(time.time() * 1000)
        if counters.lease(key, token, now_ms, now_ms + int(seconds * 1000)):
            break
        if time.monotonic() > deadline:
            raise StoreError(
                f"another writer has held this records quota lease for over {wait:.0f} s; "
                "retry later (a writer that died frees it within "
                f"{seconds:.0f} s)"
            )
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
    renewer = _Renewer(counters, key, token, seconds)
    renewer.start()
    held[mine] = lease = _Lease()
    try:
        yield lease
    finally:
        del held[mine]
        renewer.stop()
        counters.release(key, token)


def _seconds_to(at: datetime, now: datetime) -> int:
    return max(1, int((at - now).total_seconds()) + 1)


_RECORDS_RESET = "when records are purged (forgotten records still count until then)"


def _all_records(store: Store, scope: Scope) -> int:
    return store.count(scope.user_scope, Filters(include_deleted=True, include_superseded=True))


@contextmanager
def admit_writes(
    store: Store, quotas: Quotas, scope: Scope, n: int, now: datetime, *, wait: float = WAIT_SECONDS
) -> Iterator[None]:
    """Admit ``n`` new records (each embedded once) or raise :class:`QuotaExceededError`.

    Run the embedding and the write inside the block: the check and the count are atomic
    with it across processes (see the module docstring). If the block raises, the
    embeddings counted for it are given back and nothing stays reserved."""
    if n <= 0:
        yield
        return
    counters = counters_of(store)
    tenant_limit = quotas.per_tenant.max_records
    # One lease covers reading the user's quota, the count and the write: the tenant's when
    # it has a records limit (it serialises its users' writes, so it covers the per-user
    # count too), else the user's. Taken even when no records limit applies: set_user_quota
    # holds both leases while it checks usage and saves, so no write slips in between and
    # no write is admitted under a quota read before the new one was saved.
    with _records_lease(
        counters, _lease_key(scope, tenant_wide=tenant_limit is not None), wait=wait
    ) as lease:
        user = _user_quota(store, quotas, scope)
        if tenant_limit is not None:
            used = counters.count_tenant_records(scope.tenant) + lease.pending
            check("max_records (per tenant)", tenant_limit, used, n, _RECORDS_RESET)
        if user.max_records is not None:
            used = _all_records(store, scope)
            check("max_records (per user)", user.max_records, used, n, _RECORDS_RESET)
        with _counted(counters, quotas, user, scope, n, now):
            lease.pending += n
            try:
                yield
            finally:
                lease.pending -= n


@contextmanager
def _counted(
    counters: QuotaCounters, quotas: Quotas, user: Quota, scope: Scope, n: int, now: datetime
) -> Iterator[None]:
    midnight = next_midnight(now)
    ttl = _seconds_to(midnight, now)
    named = [
        (
            "embeddings_per_day (per user)",
            user.embeddings_per_day,
            Take(day_key("emb", scope.tenant, scope.user, now), n, user.embeddings_per_day, ttl),
        ),
        (
            "embeddings_per_day (per tenant)",
            quotas.per_tenant.embeddings_per_day,
            Take(
                day_key("emb", scope.tenant, None, now),
                n,
                quotas.per_tenant.embeddings_per_day,
                ttl,
            ),
        ),
    ]
    takes = [take for _, _, take in named]
    refused = counters.take_counters(takes)
    if refused is not None:
        name, limit, _ = named[refused.index]
        raise exceeded(
            name, limit, refused.used, n, f"at {midnight.isoformat()} (UTC midnight)", ttl
        )
    try:
        yield
    except BaseException:
        counters.add_counters([Take(t.key, -t.amount, None, t.ttl_seconds) for t in takes])
        raise


def check_writes(store: Store, quotas: Quotas, scope: Scope, n: int, now: datetime) -> None:
    """Whether ``n`` new records would be admitted now (no count taken; a hint only —
    :func:`admit_writes` is the atomic check)."""
    if n <= 0:
        return
    user = _user_quota(store, quotas, scope)
    midnight = f"at {next_midnight(now).isoformat()} (UTC midnight)"
    if quotas.per_tenant.max_records is not None:
        used = counters_of(store).count_tenant_records(scope.tenant)
        check("max_records (per tenant)", quotas.per_tenant.max_records, used, n, _RECORDS_RESET)
    if user.max_records is not None:
        check(
            "max_records (per user)",
            user.max_records,
            _all_records(store, scope),
            n,
            _RECORDS_RESET,
        )
    values = counters_of(store).counter_values(
        [day_key("emb", scope.tenant, scope.user, now), day_key("emb", scope.tenant, None, now)]
    )
    wait = _seconds_to(next_midnight(now), now)
    check(
        "embeddings_per_day (per user)",
        user.embeddings_per_day,
        values[day_key("emb", scope.tenant, scope.user, now)],
        n,
        midnight,
        wait,
    )
    check(
        "embeddings_per_day (per tenant)",
        quotas.per_tenant.embeddings_per_day,
        values[day_key("emb", scope.tenant, None, now)],
        n,
        midnight,
        wait,
    )


def check_context(store: Store, quotas: Quotas, scope: Scope, tokens: int) -> None:
    user = _user_quota(store, quotas, scope)
    for name, limit in (
        ("context_tokens (per user)", user.context_tokens),
        ("context_tokens (per tenant)", quotas.per_tenant.context_tokens),
    ):
        check(name, limit, 0, tokens, "with the next request (the limit is per request)")


def _lease_key(scope: Scope, *, tenant_wide: bool) -> str:
    who = _hash(scope.tenant) if tenant_wide else subject_hash(scope.tenant, scope.user)
    return f"quota:lease:{who}:records"


def set_user_quota(
    store: Store,
    quotas: Quotas,
    scope: Scope,
    quota: Quota,
    now: datetime,
    *,
    wait: float = WAIT_SECONDS,
) -> None:
    """Override one user's quota; refused (ValidationError) below what they already use.

    The check and the save are one step for writers: both leases a writer may hold (the
    tenant's, taken first, and the user's) are held meanwhile, and writers read the quota
    under theirs, so a concurrent write either lands before the count or is admitted under
    the new quota."""
    if not isinstance(quota, Quota):
        raise ValidationError("set_quota needs a memstrata.quotas.Quota")
    counters = counters_of(store)
    with (
        _records_lease(counters, _lease_key(scope, tenant_wide=True), wait=wait),
        _records_lease(counters, _lease_key(scope, tenant_wide=False), wait=wait),
    ):
        _check_and_save(store, scope, quota, now)


def _check_and_save(store: Store, scope: Scope, quota: Quota, now: datetime) -> None:
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
