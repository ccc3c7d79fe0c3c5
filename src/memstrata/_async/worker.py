"""Runs background jobs from the store's outbox: claim, dispatch by kind, retry with backoff.

A job is claimed with a short lease (:data:`DEFAULT_LEASE_SECONDS`) that a heartbeat
renews while the claim's jobs run, so a worker that dies (``kill -9``, power loss) gives its
jobs back within seconds and the next ``flush()``, worker or process runs them. Handlers
must be idempotent: a job whose worker died mid-way runs again from the start.

No job runs twice at once, and no two jobs of one user run at once:

- the queue hands out one user's jobs to one claim at a time (see the store's
  ``claim_jobs``), so the background thread, ``flush()`` and other worker processes never
  work on the same user together — ``flush()`` waits for jobs another worker holds;
- every claim has a token; finishing or failing a job names it, and the store refuses it
  once the lease was taken over (:class:`~memstrata.jobs.LeaseLostError`): a worker that
  stalled past its lease cannot record a result over the new holder's;
- a worker whose lease ran out (its heartbeat could not renew it) stops before the next
  step of the job (:func:`~memstrata.jobs.check_lease`) instead of working on beside the
  new holder;
- a handler runs under its claim's :class:`~memstrata.jobs.Fence`: every write transaction
  it makes checks, inside that transaction, that the claim still stands. A purge deletes
  the user's jobs (or, of some records, takes their claims back) in its own transaction,
  so what the job derived from the purged records lands before the purge (which removes or
  derives it again) or is refused (:class:`~memstrata.jobs.JobRevokedError`): the job stops
  there, counted in ``revoked``, not as a failure, in whichever process it runs.
"""

from __future__ import annotations

import asyncio  # async-only
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from datetime import datetime, timedelta

from memstrata._async.store.base import AsyncStore
from memstrata.aio.cancellation import given_back, to_the_end  # async-only
from memstrata.aio.worker_tasks import AsyncFinished, AsyncSignal, AsyncSpawned, spawn  # async-only

# sync: from memstrata.worker_threads import Finished, Signal, Spawned, spawn
from memstrata.clock import Clock, later
from memstrata.errors import (
    ConflictError,
    NotFoundError,
    StoreError,
    ValidationError,
)
from memstrata.jobs import (
    Fence,
    Job,
    JobRevokedError,
    LeaseLostError,
    fenced,
    lease_guard,
    retry_delay,
)
from memstrata.quota_types import subject_hash
from memstrata.worker_types import DEFAULT_LEASE_SECONDS, RunReport

__all__ = ["DEFAULT_LEASE_SECONDS", "AsyncBackgroundWorker", "AsyncJobRunner", "RunReport"]

log = logging.getLogger("memstrata.worker")

Handler = Callable[[Job], Awaitable[None]]  # async-only
# sync: Handler = Callable[[Job], None]

# The longest pause of ``run_forever`` between attempts to reach a store that did not answer.
OUTAGE_PAUSE_MAX_S = 30.0
_WAIT_POLL_SECONDS = 0.05  # how often flush() looks again at jobs another worker holds
# The token of the claim whose job the current thread (task) runs: a purge made by that job
# does not wait for the job itself.
_CLAIM: ContextVar[str | None] = ContextVar("memstrata_claim", default=None)
# What the current thread's (task's) run_pending is at: a store failure that escapes it is
# logged by the loop that retries it with this (a job by its id, kind and user hash).
_AT: ContextVar[str] = ContextVar("memstrata_worker_at", default="")
_CLAIMING = "while claiming jobs"


def _job_named(job: Job) -> str:
    """A job as a log line names it: id, kind and the hash of its tenant and user (the one
    in the user's quota keys, ``memstrata.quotas.subject_hash(tenant, user)``), never the
    ids a caller gave."""
    return f"job {job.id} ({job.kind}) of user {subject_hash(job.tenant, job.user)}"


class _Claim:
    """One claim's jobs and lease, as the heartbeat last renewed it."""

    def __init__(self, jobs: list[Job]) -> None:
        self.token = jobs[0].lease_token or ""
        self.user = (jobs[0].tenant, jobs[0].user)  # a claim's jobs are of one user
        self.open = {j.id for j in jobs}  # claimed, not finished by us yet
        self.lost: set[str] = set()  # held no more once the lease had run out: maybe elsewhere
        # taken back by a purge: a write of theirs refused, or gone while the lease stood
        self.revoked: set[str] = set()
        leases = [j.lease_until for j in jobs if j.lease_until is not None]
        self.expires: datetime | None = min(leases) if leases else None
        self.lock = threading.Lock()

    def holds(self, job_id: str, now: datetime) -> bool:
        with self.lock:
            return job_id not in self.lost and (self.expires is None or now < self.expires)

    def taken(self, held: set[str], now: datetime) -> list[str]:
        """Record the heartbeat's answer (``held``: the jobs still ours, read before
        ``now``); the newly lost ones. A job no longer held while the lease stood was taken
        by a purge: another worker claims a running job only once its lease ran out."""
        with self.lock:
            gone = self.open - held - self.lost - self.revoked
            if self.expires is None or now < self.expires:
                self.revoked |= gone
                return []
            self.lost |= gone
            return sorted(gone)

    def close(self, job_id: str) -> None:
        with self.lock:
            self.open.discard(job_id)

    def revoke(self, job_id: str) -> None:
        with self.lock:
            self.revoked.add(job_id)

    def was_revoked(self, job_id: str) -> bool:
        with self.lock:
            return job_id in self.revoked


class AsyncHeartbeat:
    """A daemon thread (a task on the event loop in the async tree) renewing the leases of
    every claim in progress, every ``interval`` seconds; started on first use, stopped by
    :meth:`stop`."""

    def __init__(self, store: AsyncStore, clock: Clock, lease_seconds: float) -> None:
        self._store = store
        self._clock = clock
        self._lease = lease_seconds
        self.interval = max(0.01, lease_seconds / 3)
        self._claims: dict[str, _Claim] = {}
        self._lock = threading.Lock()
        self._stop = AsyncSignal()
        self._thread: AsyncSpawned | None = None

    def add(self, claim: _Claim) -> None:
        with self._lock:
            self._claims[claim.token] = claim
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = spawn(self._loop, "memstrata-lease-heartbeat")

    def remove(self, claim: _Claim) -> None:
        with self._lock:
            self._claims.pop(claim.token, None)

    def running(self, tenant: str, user: str) -> bool:
        """Whether a claim of the user is in progress (but the caller's own)."""
        own = _CLAIM.get()
        with self._lock:
            return any(c.user == (tenant, user) and c.token != own for c in self._claims.values())

    async def stop(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and not thread.is_current():
            await thread.join(5.0)

    async def _loop(self) -> None:
        while not await self._stop.wait(self.interval):
            with self._lock:
                claims = list(self._claims.values())
            for claim in claims:
                await self.renew(claim)

    async def renew(self, claim: _Claim) -> None:
        until = later(self._clock.now(), timedelta(seconds=self._lease))
        try:
            held = set(await self._store.renew_leases(claim.token, until))
        except Exception as exc:  # the store may be busy or gone: the lease runs down meanwhile
            will_retry(
                exc,
                f"could not renew job leases (claim {claim.token})",
                f"retrying in {self.interval:.1f} s",
            )
            return
        # now, after the answer: the lease stood until then for every job in it
        lost = claim.taken(held, self._clock.now())
        if lost:
            log.warning(
                "jobs %s are no longer held by this worker (their lease ran out and another "
                "worker may have taken them over)",
                lost,
            )
        with claim.lock:
            claim.expires = until


def will_retry(exc: BaseException, what: str, when: str, level: int = logging.WARNING) -> None:
    """Log a failure a loop will try again (``what`` failed; ``when`` it retries).

    A retryable :class:`~memstrata.errors.StoreError` (PostgreSQL restarting, a SQLite file
    locked past its busy timeout, no file descriptors left) is one warning line with the
    error's message, which says what happened and what to do; its traceback is logged at
    DEBUG only (``-vv``): a worker riding out an outage printed one per wake before.
    Anything else (a non-retryable store error, a bug) keeps its traceback, at ``level``."""
    if isinstance(exc, StoreError) and exc.retryable:
        log.warning("%s: %s; %s", what, exc, when)
        log.debug("%s: the traceback", what, exc_info=exc)
    else:
        log.log(level, "%s; %s", what, when, exc_info=exc)


class _RanOut(LeaseLostError):
    """This worker's lease of the job ran out (its heartbeat could not renew it in time):
    another worker may have claimed it."""


def _expected(exc: BaseException) -> bool:
    """A failure that concurrency explains (a record changed under the job): retried
    quietly. Anything else (a provider down, a bug) is worth a warning."""
    causes = getattr(exc, "causes", None)
    if causes:
        return all(isinstance(c, ConflictError) for c in causes)
    return isinstance(exc, ConflictError)


class AsyncJobRunner:
    def __init__(
        self,
        store: AsyncStore,
        handlers: Mapping[str, Handler],
        clock: Clock,
        *,
        max_attempts: int = 5,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        batch: int = 50,
    ) -> None:
        if lease_seconds <= 0:
            raise ValidationError(f"lease_seconds must be positive, got {lease_seconds}")
        self._store = store
        self._handlers = dict(handlers)
        self._clock = clock
        self.max_attempts = max_attempts
        self.lease_seconds = lease_seconds
        self.batch = batch
        self._heartbeat = AsyncHeartbeat(store, clock, lease_seconds)
        self._finished = AsyncFinished()  # notified whenever a claim of ours ends

    async def aclose(self) -> None:
        """Stop the lease heartbeat (call after the last ``run_pending`` returned)."""
        await self._heartbeat.stop()

    async def run_pending(
        self,
        *,
        tenant: str | None = None,
        user: str | None = None,
        session: str | None = None,
        batch: int | None = None,
        include_delayed: bool = False,
        wait: bool = False,
        timeout: float | None = None,
        stopping: Callable[[], bool] | None = None,
    ) -> RunReport:
        """Run claimable jobs until none is left.

        ``include_delayed`` also runs jobs whose retry time has not come yet. ``wait`` (what
        ``flush()`` does) also waits for jobs held by another worker — this process's
        background thread or another process — until none is open; a dead worker's jobs
        come back when its lease runs out (seconds) and are run here. ``timeout`` bounds
        that wait; jobs still held elsewhere then are counted in ``waiting``. ``stopping``
        (the background worker's stop) is asked before each job: once it says so, the run
        ends after the current job and the rest of its claim is pending again at once."""
        report = RunReport()
        deadline = None if timeout is None else time.monotonic() + timeout
        size = batch or self.batch
        while True:
            if stopping is not None and stopping():
                return report
            _AT.set(_CLAIMING)
            now = self._clock.now()
            horizon = later(now, timedelta(days=3650)) if include_delayed or wait else None
            claimed = self._store.claim_jobs(
                now,
                limit=size,
                lease_seconds=self.lease_seconds,
                tenant=tenant,
                user=user,
                session=session,
                due_before=horizon,
            )
            # cancelled meanwhile, the claim (made by the store anyway) is given back  # async-only
            jobs = await given_back(claimed, self._give_back_cancelled)  # async-only
            # sync: jobs = claimed
            report.claimed += len(jobs)
            if jobs:
                await self._run_claim(jobs, report, stopping)
                continue
            if not wait:
                return report
            still = await self._store.count_open_jobs(tenant=tenant, user=user, session=session)
            if still == 0:
                return report
            if deadline is not None and time.monotonic() >= deadline:
                report.waiting = still
                return report
            log.debug("waiting for %d job(s) held by another worker", still)
            await self._finished.wait(_WAIT_POLL_SECONDS)

    async def _run_claim(
        self, jobs: list[Job], report: RunReport, stopping: Callable[[], bool] | None = None
    ) -> None:
        claim = _Claim(jobs)
        self._heartbeat.add(claim)
        mine = _CLAIM.set(claim.token)
        ran = 0
        try:
            for job in jobs:
                if stopping is not None and stopping():  # the rest waits for the next run
                    await self._give_back(jobs[ran:], "the worker stopped before it", report, claim)
                    return
                await self._run_one(job, claim, report)
                ran += 1
        except asyncio.CancelledError:  # async-only
            # queued again now, not when the lease runs out (the next flush waited)  # async-only
            await to_the_end(self._give_back_cancelled(jobs[ran:]))  # async-only
            raise  # async-only
        finally:
            _CLAIM.reset(mine)
            self._heartbeat.remove(claim)
            self._finished.notify_all()

    def running(self, tenant: str, user: str) -> bool:
        """Whether this runner is running a job of the user (the background worker, a
        flush; not the caller's own job)."""
        return self._heartbeat.running(tenant, user)

    async def wait_user(self, tenant: str, user: str) -> None:
        """Wait until this runner runs no job of the user (but the caller's own)."""
        while self._heartbeat.running(tenant, user):
            await self._finished.wait(_WAIT_POLL_SECONDS)

    async def _give_back_cancelled(self, jobs: list[Job]) -> None:  # async-only
        await self._give_back(jobs, "its run was cancelled")  # async-only

    async def _give_back(
        self,
        jobs: list[Job],
        why: str,
        report: RunReport | None = None,
        claim: _Claim | None = None,
    ) -> None:
        """Claimed jobs not run (cancelled, or the worker stopped), pending again now, with
        the attempt their claim counted given back (not run is not a failed attempt).
        ``report`` counts each (a cancelled run has none to return)."""
        give_back, now = self._store.give_back_job, self._clock.now()
        for job in jobs:
            _AT.set(f"while giving back {_job_named(job)}")
            try:
                if claim is not None and claim.was_revoked(job.id):
                    raise NotFoundError(f"job {job.id} was taken back by a purge")
                await give_back(job.id, why, now, job.lease_token)
            except (LeaseLostError, NotFoundError) as exc:
                # taken over or purged meanwhile: not ours to give back
                if report is not None and claim is not None:
                    self._taken(job, claim, report, exc, "before it started")
                continue
            if report is not None:
                report.given_back += 1

    def _taken(self, job: Job, claim: _Claim, report: RunReport, exc: Exception, when: str) -> None:
        """The store refused to record the job's end (``exc``), or the heartbeat saw it
        go: revoked if a purge took it (its row gone, or refused while the lease stood),
        else lost (the lease had run out: another worker may run it)."""
        if (
            isinstance(exc, NotFoundError)
            or claim.was_revoked(job.id)
            or (not isinstance(exc, _RanOut) and claim.holds(job.id, self._clock.now()))
        ):
            self._revoked(job, report, when)
        else:
            self._lost(job, report, str(exc))

    def _lost(self, job: Job, report: RunReport, why: str) -> None:
        report.lost += 1
        log.warning("job %s (%s): %s; another worker may run it", job.id, job.kind, why)

    def _revoked(self, job: Job, report: RunReport, when: str = "while it ran") -> None:
        report.revoked += 1
        log.info(
            "job %s (%s) was taken back by a purge %s: it stopped there, nothing it would "
            "still write is stored (not a failure)",
            job.id,
            job.kind,
            when,
        )

    async def _run_one(self, job: Job, claim: _Claim, report: RunReport) -> None:
        _AT.set(f"in {_job_named(job)}")
        token = job.lease_token
        if claim.was_revoked(job.id):  # the heartbeat saw a purge take it
            self._revoked(job, report, "before it started")
            claim.close(job.id)
            return
        if not claim.holds(job.id, self._clock.now()):
            self._lost(job, report, "its lease ran out before it started")
            claim.close(job.id)
            return
        try:
            handler = self._handlers.get(job.kind)
            if handler is None:
                message = f"no handler for job kind {job.kind!r}"
                await self._store.fail_job(job.id, message, None, lease_token=token)
                report.failed += 1
                report.errors.append(f"{job.kind} {job.id}: {message}")
                return

            def check() -> None:
                if claim.was_revoked(job.id):
                    raise JobRevokedError(f"job {job.id} was taken back by a purge")
                if not claim.holds(job.id, self._clock.now()):
                    raise _RanOut(f"the lease of job {job.id} ran out mid-job")

            fence = Fence(job.id, token or "", lambda: claim.revoke(job.id))
            try:
                with lease_guard(check), fenced(fence if token is not None else None):
                    await handler(job)
            except LeaseLostError:
                raise
            except Exception as exc:  # a handler may fail in any way; the job keeps it
                if isinstance(exc, JobRevokedError) or claim.was_revoked(job.id):
                    self._revoked(job, report)  # (a handler may have wrapped the refusal)
                    return
                await self._failed(job, exc, report)
                return
            if claim.was_revoked(job.id):  # a handler that swallowed a refused write
                self._revoked(job, report)
                return
            await self._store.finish_job(job.id, lease_token=token)
            report.done += 1
        except (LeaseLostError, NotFoundError) as exc:
            # its end not recorded: its row deleted with its user or its claim taken back
            # by a purge (revoked), or its lease ran out (lost)
            self._taken(job, claim, report, exc, "while it ran")
        finally:
            claim.close(job.id)

    async def _failed(self, job: Job, exc: Exception, report: RunReport) -> None:
        """Record the failure (the store refusing it, the job was taken: the caller counts
        it so, not as a failure)."""
        attempts = job.attempts  # counted by the claim
        message = f"{type(exc).__name__}: {exc}"
        if attempts >= self.max_attempts:
            await self._store.fail_job(job.id, message, None, lease_token=job.lease_token)
            log.error("job %s (%s) failed for good: %s", job.id, job.kind, message)
            report.failed += 1
        else:
            await self._store.fail_job(
                job.id,
                message,
                later(self._clock.now(), retry_delay(attempts)),
                lease_token=job.lease_token,
            )
            level = logging.DEBUG if _expected(exc) else logging.WARNING
            log.log(level, "job %s (%s) failed, will retry: %s", job.id, job.kind, message)
            report.retried += 1
        report.errors.append(f"{job.kind} {job.id}: {message}")

    async def run_forever(
        self,
        *,
        poll_seconds: float = 1.0,
        stop: Callable[[], bool] = lambda: False,
        on_run: Callable[[RunReport], object] | None = None,
    ) -> None:
        """The ``memstrata worker`` loop. A store that can announce new jobs (PostgreSQL's
        ``LISTEN``/``NOTIFY``: ``wait_for_jobs``) wakes it at once instead of at the next poll.
        ``on_run`` is given the report of each run that claimed a job (not of idle polls).

        A store that cannot be reached (a retryable ``StoreError``: PostgreSQL restarting, a
        SQLite file locked past its busy timeout) is tried again after a pause that doubles
        up to :data:`OUTAGE_PAUSE_MAX_S`, with a warning each time and a line once it
        answers; its jobs wait in it. A store this worker cannot use as it is (a newer
        schema, vectors of another embedding model, a damaged or read-only file, a full
        disk) ends the loop: waiting would not change it."""
        wait = getattr(self._store, "wait_for_jobs", None)
        failures = 0
        while not stop():
            try:
                report = await self.run_pending()
                if not report.claimed:
                    if wait is not None:
                        await wait(poll_seconds)
                    else:
                        await asyncio.sleep(poll_seconds)
            except StoreError as exc:
                if not exc.retryable:  # a newer schema, another model, a damaged file ...
                    raise
                failures += 1
                pause = min(poll_seconds * 2**failures, OUTAGE_PAUSE_MAX_S)
                log.warning(
                    "the store did not answer %s (%s); trying again in %.1f s",
                    _AT.get() or _CLAIMING,
                    exc,
                    pause,
                )
                deadline = time.monotonic() + pause
                while not stop() and (left := deadline - time.monotonic()) > 0:
                    await asyncio.sleep(min(left, poll_seconds))
                continue
            if failures:
                log.warning("the store answers again after %d failed attempts", failures)
                failures = 0
            if report.claimed and on_run is not None:
                on_run(report)


class AsyncBackgroundWorker:
    """An in-process daemon thread (a task on the event loop in the async tree) that runs
    jobs as they are queued.

    Woken by every write and polling otherwise (jobs queued by other processes, retries
    coming due). ``stop()`` lets the current job finish; anything still queued stays in the
    store for the next flush, worker or process.
    """

    def __init__(self, runner: AsyncJobRunner, *, poll_seconds: float = 2.0) -> None:
        self._runner = runner
        self._poll = poll_seconds
        self._wake = AsyncSignal()
        self._stopping = AsyncSignal()
        self._thread = spawn(self._loop, "memstrata-worker")

    def wake(self) -> None:
        self._wake.set()

    async def stop(self, timeout: float = 30.0) -> None:
        self._stopping.set()
        self._wake.set()
        await self._thread.join(timeout)

    async def _loop(self) -> None:
        while not self._stopping.is_set():
            await self._wake.wait(self._poll)
            self._wake.clear()
            if self._stopping.is_set():
                return
            try:
                await self._runner.run_pending(stopping=self._stopping.is_set)
            except Exception as exc:  # the store may be busy or gone; the next wake retries
                will_retry(
                    exc,
                    f"background job run failed {_AT.get() or _CLAIMING}",
                    f"will retry at the next write or within {self._poll:g} s",
                    logging.ERROR,
                )
