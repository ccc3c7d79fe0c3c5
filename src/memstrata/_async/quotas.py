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
  that fails after its take gives the take back; an async call cancelled after it keeps
  it (its embedding may have run and its write landed: cancelling is no free embedding).
- records per user and per tenant count the store's own records (every type, deleted and
  superseded ones included, until they are purged), so the check and the write run under a
  lease (:meth:`~memstrata.store.quota_counters.QuotaCounters.lease`, in the durable
  store): the next writer counts only after the previous one committed. The lease is the
  tenant's when the tenant has a records limit (its users' writes then queue behind each
  other), else the user's. A thread renews it every ``LEASE_SECONDS / 3`` while the batch
  runs, so a batch slower than one lease keeps it; a holder that dies frees it after
  ``LEASE_SECONDS``.
- a write that may merge instead (``mem.add``: a near duplicate is found by its embedding)
  has the two checked apart under that one lease: with the records quota full its
  embedding is still counted and computed, and the records refusal is raised only if it
  would write a record (:class:`~memstrata.quota_types.Admission`).

Counters live in the store's metadata, keyed by a hash of the scope (never the raw ids), one
key per UTC day for embeddings. The take that creates a day's row deletes that counter's
rows of more than a week before (:func:`~memstrata.quota_types.day_take`, same
transaction; a clock stepped days forward and back again still finds today's count), so a
user (and a tenant) keeps at most 8 days' rows; a user's purge removes those (and their
Redis mirrors).

**Processes without quotas** (session 32). A quota counts the embeddings its user's calls
ask for wherever they run: a ``Memory`` (or ``memstrata worker``) opened without quotas
counts them too, with no limit (:func:`count_embeddings`), once the store says quotas are
in use (:class:`AsyncQuotasInUse`: a ``meta`` row a process with quotas writes when it
opens; read at most every :data:`FLAG_SECONDS` until seen, then never again). On a store no
process with quotas has opened, such a write costs nothing more. What the library derives
on its own (conversation episodes, extracted facts, promoted key entries) is counted the
same way, with no limit, by whichever process writes it (session 33): never refused, so
no background job loses what it derived. An unlimited count goes into the write's own
transaction on SQLite and PostgreSQL (:mod:`memstrata.store.counted_writes`): taken by the
block's first transaction to reach its ``COMMIT`` (session 34: writes run at once inside
one block), counted apart at the block's end when a write of it landed without it, kept
with a ``COMMIT`` PostgreSQL says committed after its connection was lost, and handed on
when that cannot be told (counted twice at worst, never lost).
"""

from __future__ import annotations

import asyncio  # async-only
import logging
import secrets
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar  # async-only
from dataclasses import dataclass
from datetime import datetime

from memstrata._async.store.base import AsyncStore
from memstrata._async.store.quota_counters import AsyncQuotaCounters, Take
from memstrata.aio.cancellation import given_back, to_the_end  # async-only
from memstrata.aio.worker_tasks import AsyncSignal, AsyncSpawned, spawn  # async-only
from memstrata.errors import QuotaExceededError, StoreError, ValidationError
from memstrata.filters import Filters
from memstrata.quota_types import (
    LEASE_SECONDS,
    RECORDS_RESET,
    WAIT_SECONDS,
    Admission,
    Quota,
    Quotas,
    check,
    day_key,
    day_take,
    exceeded,
    lease_key,
    next_midnight,
    parse_quota,
    seconds_to,
    subject_hash,
)
from memstrata.scope import Scope
from memstrata.store import counted_writes
from memstrata.store.counted_writes import Counted, Home, carried
from memstrata.store.url import redact_url

# sync: import threading
# sync: from memstrata.worker_threads import Signal, Spawned, spawn

__all__ = [
    "FLAG_SECONDS",
    "IN_USE_KEY",
    "LEASE_SECONDS",
    "WAIT_SECONDS",
    "Admission",
    "AsyncQuotasInUse",
    "Quota",
    "Quotas",
    "admit_marked",
    "admit_writes",
    "check_context",
    "clear_in_use",
    "count_embeddings",
    "day_key",
    "next_midnight",
    "parse_quota",
    "quotas_in_use",
    "set_user_quota",
    "subject_hash",
]

log = logging.getLogger("memstrata.quotas")

# The store-wide flag: written (once) by a process that opens the store with quotas; its
# value says nothing more (a constant, so `memstrata migrate` copies it and verifies it
# equal). Outside the counter ranges ("quota:", "rate:") that a sweep deletes.
IN_USE_KEY = "quotas:in_use"
# How stale a process may read the flag: a process with quotas opening the store may see
# at most this many seconds of another's writes uncounted (and as long after an operator
# cleared it under a running process with quotas, which writes it again).
FLAG_SECONDS = 10.0
# How long a block's end waits for a sibling transaction that carries its counts (its last
# statements and COMMIT) before counting them apart.
CLOSE_WAIT = 30.0


class AsyncQuotasInUse:
    """Whether a process with quotas uses this store's counters, as one process sees it.

    :meth:`mark` (a process with quotas, when it opens the store and at its writes under
    quotas once its last look is :data:`FLAG_SECONDS` old) writes :data:`IN_USE_KEY` unless
    it is there. :meth:`seen` (a write of a process without quotas, and what the library
    derives) reads it at most once every :data:`FLAG_SECONDS` (monotonic: the memory's
    clock may be fixed). Both look again every :data:`FLAG_SECONDS` (session 33; before, a
    flag once seen was never read again): an operator may clear the flag
    (:func:`clear_in_use`, ``memstrata quotas clear-flag``), and then the processes without
    quotas stop counting within :data:`FLAG_SECONDS`, while a process still running with
    quotas writes it again at its next write past that: clearing under a running quota
    costs at most those seconds of uncounted writes, as a first open does."""

    def __init__(self, store: AsyncStore) -> None:
        self._store = store
        self._set = False
        self._read_at = float("-inf")  # the first write reads it

    @property
    def marked(self) -> bool:
        """This process wrote the flag or saw it set, at most ``FLAG_SECONDS`` ago."""
        return self._set and time.monotonic() - self._read_at < FLAG_SECONDS

    async def mark(self) -> None:
        if self.marked:
            return
        now = time.monotonic()
        if not await self._store.get_meta(IN_USE_KEY):
            await self._store.set_meta(IN_USE_KEY, "1")
        self._set, self._read_at = True, now

    async def seen(self) -> bool:
        now = time.monotonic()
        if now - self._read_at < FLAG_SECONDS:
            return self._set
        self._set = bool(await self._store.get_meta(IN_USE_KEY))
        self._read_at = now
        return self._set


async def quotas_in_use(store: AsyncStore) -> bool:
    """Whether the store's ``quotas:in_use`` flag is set (``memstrata quotas status``)."""
    return bool(await store.get_meta(IN_USE_KEY))


async def clear_in_use(store: AsyncStore) -> bool:
    """Remove the store's ``quotas:in_use`` flag (``memstrata quotas clear-flag``): for an
    operator who no longer runs any process with quotas on this store, so the processes
    without quotas stop counting embeddings (within :data:`FLAG_SECONDS`). A process still
    running with quotas writes it again at its next write (:class:`AsyncQuotasInUse`), so
    clearing too early costs at most those seconds of uncounted writes, never a quota.
    The day's counters are kept (they expire as always). Whether it was set."""
    if not await quotas_in_use(store):
        return False
    await counters_of(store).forget_counters([IN_USE_KEY])  # one meta row, deleted
    return True


async def _count(store: AsyncStore, key: str) -> int:
    return (await counters_of(store).counter_values([key]))[key]


async def _user_quota(store: AsyncStore, quotas: Quotas, scope: Scope) -> Quota:
    raw = await store.get_meta(f"quota:user:{subject_hash(scope.tenant, scope.user)}:override")
    if not raw:
        return quotas.per_user
    a, b, c = (None if v == "" else int(v) for v in raw.split(","))
    return Quota(a, b, c)


def counters_of(store: AsyncStore) -> AsyncQuotaCounters:
    counters: object = store
    if not isinstance(counters, AsyncQuotaCounters):
        raise StoreError(
            f"the store {redact_url(store.url)} keeps no quota counters (take_counters, "
            "lease); use sqlite://, postgresql:// or memory://, or open Memory without quotas="
        )
    return counters


class AsyncRenewer:
    """Renews a held lease every third of ``LEASE_SECONDS`` until stopped, so a batch that
    takes longer than one lease (a slow embedder, a huge import) keeps its place: nobody
    else counts and writes while it has not committed. A renewal that finds the lease taken
    (this process stalled past the whole lease) is logged as an error."""

    def __init__(self, counters: AsyncQuotaCounters, key: str, token: str, seconds: float) -> None:
        self._counters, self._key, self._token, self._seconds = counters, key, token, seconds
        self._halt = AsyncSignal()
        self.renewals = 0
        self.lost = False
        self._thread: AsyncSpawned | None = None

    def start(self) -> None:
        self._thread = spawn(self.run, f"memstrata-lease-{self._key}")

    async def run(self) -> None:
        while not await self._halt.wait(self._seconds / 3):
            now_ms = int(time.time() * 1000)
            try:
                held = await self._counters.lease(
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

    async def stop(self) -> None:
        self._halt.set()
        if self._thread is not None:
            await self._thread.join()


# The leases this thread (task) holds, with the records admitted under them.
# A task's leases are its own: a task started meanwhile copies the context  # async-only
# (asyncio.gather), so the map names the task that made it.  # async-only
_LeaseMap = tuple[object, dict[tuple[int, str], "_Lease"]]  # async-only
_held: ContextVar[_LeaseMap | None] = ContextVar("quota_leases", default=None)  # async-only
# sync: _held = threading.local()


def _leases() -> dict[tuple[int, str], _Lease]:
    task = asyncio.current_task()  # async-only
    held = _held.get()  # async-only
    if held is None or held[0] is not task:  # async-only
        held = (task, {})  # async-only
        _held.set(held)  # async-only
    return held[1]  # async-only
    # sync: leases: dict[tuple[int, str], _Lease] = _held.__dict__.setdefault("leases", {})
    # sync: return leases


@dataclass(slots=True)
class _Lease:
    pending: int = 0  # records admitted under it and not yet written (nested admissions)


@asynccontextmanager
async def _records_lease(
    counters: AsyncQuotaCounters, key: str, *, wait: float
) -> AsyncIterator[_Lease]:
    """Hold ``key`` for the block (renewed while it runs). Re-entrant in one thread: a
    nested admission (an import of several users of one tenant) shares the lease and sees
    what the outer one admitted (``pending``) instead of waiting for itself."""
    held = _leases()
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
        # a caller cancelled while the store takes the lease gives it back  # async-only
        if await given_back(  # async-only
            counters.lease(key, token, now_ms, now_ms + int(seconds * 1000)),  # async-only
            lambda got: counters.release(key, token) if got else asyncio.sleep(0),  # async-only
        ):  # async-only
            break  # async-only
        # sync: if counters.lease(key, token, now_ms, now_ms + int(seconds * 1000)):
        # sync:     break
        if time.monotonic() > deadline:
            raise StoreError(
                f"another writer has held this records quota lease for over {wait:.0f} s; "
                "retry later (a writer that died frees it within "
                f"{seconds:.0f} s)",
                retryable=True,
            )
        await asyncio.sleep(pause)
        pause = min(pause * 2, 0.05)
    renewer = AsyncRenewer(counters, key, token, seconds)
    renewer.start()

    async def end() -> None:
        await renewer.stop()
        await counters.release(key, token)

    held[mine] = lease = _Lease()
    try:
        yield lease
    finally:
        del held[mine]
        # a cancellation landing here must not keep the lease  # async-only
        await to_the_end(end())  # async-only
        # sync: end()


async def _all_records(store: AsyncStore, scope: Scope) -> int:
    return await store.count(
        scope.user_scope, Filters(include_deleted=True, include_superseded=True)
    )


@asynccontextmanager
async def admit_writes(
    store: AsyncStore,
    quotas: Quotas,
    scope: Scope,
    n: int,
    now: datetime,
    *,
    wait: float = WAIT_SECONDS,
    may_merge: bool = False,
) -> AsyncIterator[Admission]:
    """Admit ``n`` new records (each embedded once) or raise :class:`QuotaExceededError`.

    Run the embedding and the write inside the block: the check and the count are atomic
    with it across processes (see the module docstring). If the block raises, the
    embeddings counted for it are given back and nothing stays reserved.

    ``may_merge``: the block may end without writing its records (a dedup merge), and
    only its embeddings decide whether it does. Its embeddings are then admitted on their
    own when the records quota is full, and the records refusal waits in the
    :class:`Admission` until the block asks for the records (:meth:`Admission.records`),
    still under the lease: a writer never counts records that another is deciding on. The
    embeddings stay counted when the block is refused its records (they were computed)."""
    if n <= 0:
        yield Admission()
        return
    counters = counters_of(store)
    tenant_limit = quotas.per_tenant.max_records
    # One lease covers reading the user's quota, the count and the write: the tenant's when
    # it has a records limit (it serialises its users' writes, so it covers the per-user
    # count too), else the user's. Taken even when no records limit applies: set_user_quota
    # holds both leases while it checks usage and saves, so no write slips in between and
    # no write is admitted under a quota read before the new one was saved.
    async with _records_lease(
        counters, lease_key(scope, tenant_wide=tenant_limit is not None), wait=wait
    ) as lease:
        user = await _user_quota(store, quotas, scope)
        try:
            await _check_records(store, quotas, user, scope, n, lease.pending)
        except QuotaExceededError as refused:
            if not may_merge:
                raise
            admission = Admission(refused)
        else:
            admission = Admission()
        records = 0 if admission.refused else n
        async with _counted(counters, quotas, user, scope, n, now, admission):
            lease.pending += records
            try:
                yield admission
            finally:
                lease.pending -= records


async def _check_records(
    store: AsyncStore, quotas: Quotas, user: Quota, scope: Scope, n: int, pending: int
) -> None:
    """Refuse ``n`` more records over the tenant's or the user's ``max_records`` (under
    the lease; ``pending``: admitted under it by an outer admission, not yet written)."""
    if quotas.per_tenant.max_records is not None:
        used = await counters_of(store).count_tenant_records(scope.tenant) + pending
        check("max_records (per tenant)", quotas.per_tenant.max_records, used, n, RECORDS_RESET)
    if user.max_records is not None:
        used = await _all_records(store, scope)
        check("max_records (per user)", user.max_records, used, n, RECORDS_RESET)


@asynccontextmanager
async def _counted(
    counters: AsyncQuotaCounters,
    quotas: Quotas,
    user: Quota,
    scope: Scope,
    n: int,
    now: datetime,
    admission: Admission,
) -> AsyncIterator[None]:
    midnight = next_midnight(now)
    ttl = seconds_to(midnight, now)
    tenant_limit = quotas.per_tenant.embeddings_per_day
    named = [  # creating today's row deletes the counter's days over a week old (day_take)
        (
            "embeddings_per_day (per user)",
            user.embeddings_per_day,
            day_take("emb", scope.tenant, scope.user, now, n, user.embeddings_per_day),
        ),
        (
            "embeddings_per_day (per tenant)",
            tenant_limit,
            day_take("emb", scope.tenant, None, now, n, tenant_limit),
        ),
    ]
    takes = [take for _, _, take in named]
    home = getattr(counters, "counts_home", None)
    if isinstance(home, Home) and all(limit is None for _, limit, _ in named):
        # no embeddings limit to check before the embedding: counted by the write
        async with _with_the_write(counters, home, takes, admission):
            yield
        return
    undo = [Take(t.key, -t.amount, None, t.ttl_seconds) for t in takes]
    refused = await given_back(  # async-only
        counters.take_counters(takes),  # async-only
        lambda no: counters.add_counters(undo) if no is None else asyncio.sleep(0),  # async-only
    )  # async-only
    # sync: refused = counters.take_counters(takes)
    if refused is not None:
        name, limit, _ = named[refused.index]
        over = exceeded(
            name, limit, refused.used, n, f"at {midnight.isoformat()} (UTC midnight)", ttl
        )
        if admission.refused is None:
            raise over
        # Both full: the text may be a near duplicate that would merge, but nothing can
        # tell without the embedding; say both, and when the call may succeed again.
        raise QuotaExceededError(
            f"{str(admission.refused).removesuffix(' Nothing was written.')} A near "
            f"duplicate of a stored memory would still merge, but finding one needs an "
            f"embedding: {over}",
            retry_after=over.retry_after,
        ) from over
    try:
        yield
    except asyncio.CancelledError:  # async-only
        # its embedding may have run and its write landed: the take stays  # async-only
        raise  # async-only
    except BaseException:
        if not admission.spent:
            await counters.add_counters(undo)
        raise


@asynccontextmanager
async def _with_the_write(
    counters: AsyncQuotaCounters, home: Home, takes: Sequence[Take], admission: Admission
) -> AsyncIterator[None]:
    """Unlimited takes carried by the block's next write transaction on ``home``'s store
    (:mod:`memstrata.store.counted_writes`): committed with it, so a write that fails or
    rolls back (or is cancelled, or whose process dies) counts nothing, and a PostgreSQL
    write pays no transaction of its own for them (session 33). A block that ends without
    having written (nothing new to store) or that was refused its records after its
    embedding was spent (``admission.spent``) counts them apart at its end, as before:
    what was embedded is counted. A block that raises after its write landed keeps them."""
    entry = Counted(tuple(takes), home)
    try:
        with carried(entry):
            yield
    except Exception:
        # Counted apart when its embedding was spent, or when a write of the block landed
        # without the count (a sibling transaction that carried it failed: session 34);
        # else left open: a sibling transaction still running (asyncio.gather raises at
        # the first error) carries it if it commits.
        if (admission.spent or entry.landed) and await _close(entry):
            await counters.add_counters(list(takes))
        raise
    if await _close(entry):
        await counters.add_counters(list(takes))


async def _close(entry: Counted) -> bool:
    """Whether the block's counts are to be added apart (:func:`counted_writes.close`): a
    sibling transaction holding them (its ``COMMIT`` under way) is waited for, then they
    are written with it or handed back to this block. Bounded: after
    :data:`CLOSE_WAIT` seconds they are counted apart (twice at worst, never lost)."""
    deadline = time.monotonic() + CLOSE_WAIT
    while True:
        closed = counted_writes.close(entry, force=time.monotonic() > deadline)
        if closed is not None:
            return closed
        await asyncio.sleep(0.001)


@asynccontextmanager
async def count_embeddings(
    store: AsyncStore, in_use: AsyncQuotasInUse | None, scope: Scope, n: int, now: datetime
) -> AsyncIterator[Admission]:
    """Count ``n`` embeddings for ``scope``'s user (and tenant) on the day of ``now`` with
    no limit, when the store's quotas are in use (:meth:`AsyncQuotasInUse.seen`): what a
    caller's write admits in a process without quotas (session 32: before, a ``Memory`` or
    ``memstrata worker`` without ``quotas=`` counted nothing, so ``serve --user-quota``
    beside it missed what it embedded for its users). Counted before the block, as a
    process with quotas counts (a store error raised before anything is embedded or
    written), and given back if the block raises. A store without counters counts nothing,
    and so does a write given no flag (``in_use`` None)."""
    counters: object = store
    if n <= 0 or in_use is None or not isinstance(counters, AsyncQuotaCounters):
        yield Admission()
        return
    if not await in_use.seen():
        yield Admission()
        return
    takes = [
        day_take("emb", scope.tenant, scope.user, now, n, None),
        day_take("emb", scope.tenant, None, now, n, None),
    ]
    home = getattr(store, "counts_home", None)
    if isinstance(home, Home):  # counted by the block's write (counted_writes.py)
        admission = Admission()
        async with _with_the_write(counters, home, takes, admission):
            yield admission
        return
    undo = [Take(t.key, -t.amount, None, t.ttl_seconds) for t in takes]
    await given_back(  # async-only
        counters.take_counters(takes),  # async-only
        lambda _: counters.add_counters(undo),  # async-only
    )  # async-only
    # sync: counters.take_counters(takes)
    try:
        yield Admission()
    except asyncio.CancelledError:  # async-only
        # its embedding may have run and its write landed: the count stays  # async-only
        raise  # async-only
    except BaseException:
        await counters.add_counters(undo)
        raise


@asynccontextmanager
async def admit_marked(
    in_use: AsyncQuotasInUse,
    store: AsyncStore,
    quotas: Quotas,
    scope: Scope,
    n: int,
    now: datetime,
    *,
    may_merge: bool = False,
) -> AsyncIterator[Admission]:
    """:func:`admit_writes` after marking the store's quotas in use: the first write under
    quotas a process was given after its store opened (``Memory.quotas = ...``,
    ``set_quota``) tells the processes without quotas to count too."""
    await in_use.mark()
    async with admit_writes(store, quotas, scope, n, now, may_merge=may_merge) as admission:
        yield admission


async def check_context(store: AsyncStore, quotas: Quotas, scope: Scope, tokens: int) -> None:
    user = await _user_quota(store, quotas, scope)
    for name, limit in (
        ("context_tokens (per user)", user.context_tokens),
        ("context_tokens (per tenant)", quotas.per_tenant.context_tokens),
    ):
        check(name, limit, 0, tokens, "with the next request (the limit is per request)")


async def set_user_quota(
    store: AsyncStore,
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
    async with (
        _records_lease(counters, lease_key(scope, tenant_wide=True), wait=wait),
        _records_lease(counters, lease_key(scope, tenant_wide=False), wait=wait),
    ):
        await _check_and_save(store, scope, quota, now)


async def _check_and_save(store: AsyncStore, scope: Scope, quota: Quota, now: datetime) -> None:
    if quota.max_records is not None:
        used = await store.count(
            scope.user_scope, Filters(include_deleted=True, include_superseded=True)
        )
        if quota.max_records < used:
            raise ValidationError(
                f"max_records {quota.max_records} is below the {used} records this user "
                "already has; purge some first or choose a limit >= current usage"
            )
    if quota.embeddings_per_day is not None:
        used = await _count(store, day_key("emb", scope.tenant, scope.user, now))
        if quota.embeddings_per_day < used:
            raise ValidationError(
                f"embeddings_per_day {quota.embeddings_per_day} is below the {used} already "
                "used today; choose a limit >= current usage"
            )
    value = ",".join(
        "" if v is None else str(v)
        for v in (quota.max_records, quota.embeddings_per_day, quota.context_tokens)
    )
    await store.set_meta(f"quota:user:{subject_hash(scope.tenant, scope.user)}:override", value)
