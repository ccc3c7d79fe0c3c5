"""Background jobs: durable units of deferred work kept in the store's outbox."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any
from uuid import uuid4

from .errors import ConflictError, MemstrataError

__all__ = [
    "DONE_SWEEP_BATCH",
    "Fence",
    "Job",
    "JobRevokedError",
    "JobStatus",
    "LeaseLostError",
    "check_lease",
    "current_fence",
    "fenced",
    "job_status",
    "lease_guard",
    "new_lease_token",
    "retry_delay",
    "unfenced",
]


# Done jobs one sweep deletes at most (``sweep_done_jobs``: one transaction of the store,
# so claims and finishes wait for no longer than such a batch takes; jobs32).
DONE_SWEEP_BATCH = 1_000


class JobStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"  # gave up after max attempts; kept for inspection and manual retry


def job_status(value: str) -> JobStatus:
    """Parse a status a caller passed in; an unknown one is a clear ValidationError."""
    from .errors import ValidationError

    try:
        return JobStatus(value)
    except ValueError:
        allowed = ", ".join(s.value for s in JobStatus)
        raise ValidationError(f"job status {value!r} is not one of: {allowed}") from None


@dataclass(frozen=True, slots=True)
class Job:
    id: str
    kind: str
    tenant: str
    user: str
    payload: Mapping[str, Any]
    created_at: datetime
    run_after: datetime
    agent: str | None = None
    session: str | None = None
    status: JobStatus = JobStatus.PENDING
    attempts: int = 0
    last_error: str | None = None
    lease_until: datetime | None = None
    dedup_key: str | None = field(default=None)
    # Who holds the lease: a fresh token per claim. Finishing, failing or renewing names it,
    # so a worker whose lease was taken over can no longer change the job (fencing).
    lease_token: str | None = None


class LeaseLostError(ConflictError):
    """The job's lease expired and another worker claimed it: this worker's result is not
    recorded (the other worker runs the job; handlers are idempotent)."""


class JobRevokedError(MemstrataError):
    """A purge took the job back while it ran (deleted with its user, or queued again to run
    on the records left): the write that found out was refused and nothing of it stored.
    The worker stops the job; it is not a failure.

    Deliberately not a :class:`ConflictError`: code that reads again and retries on a
    conflict would only be refused again; this one has to reach the worker."""


class Fence:
    """The claim a job runs under, as every write transaction it makes checks it.

    The worker sets one around a handler (:func:`fenced`); a store's write transaction
    started under it first checks, inside that transaction, that the job row still exists
    and is held under ``lease_token`` (one indexed read; on PostgreSQL it also locks the
    row ``FOR SHARE``, so a purge's ``DELETE``/``UPDATE`` of the row waits for that write
    and then fences the next). A purge deletes the user's jobs or takes their claims back
    in its own transaction, so a job's write lands either before the purge (which then
    removes or derives it again) or not at all (:class:`JobRevokedError`).

    ``carried``: what a store holds for this job's next write transaction (embedding-cache
    entries of the texts the job embedded), by store; it goes with the fence, so it is
    written only under the job's claim and dropped once the job ends or is refused."""

    __slots__ = ("_on_revoked", "carried", "job_id", "lease_token")

    def __init__(self, job_id: str, lease_token: str, on_revoked: Callable[[], None]) -> None:
        self.job_id = job_id
        self.lease_token = lease_token
        self._on_revoked = on_revoked
        self.carried: dict[int, dict[Any, Any]] = {}

    def refused(self) -> JobRevokedError:
        """The error of a write this claim no longer allows (and tell the worker)."""
        self.carried.clear()
        self._on_revoked()
        return JobRevokedError(
            f"job {self.job_id} was taken back by a purge while it ran (its user purged, or "
            "queued again to run on the records left); this write was refused and nothing "
            "of it was stored"
        )


_FENCE: ContextVar[Fence | None] = ContextVar("memstrata_job_fence", default=None)


@contextmanager
def fenced(fence: Fence | None) -> Iterator[None]:
    """Run the block's writes under ``fence`` (``None``: under none, :func:`unfenced`)."""
    token = _FENCE.set(fence)
    try:
        yield
    finally:
        _FENCE.reset(token)


def unfenced() -> AbstractContextManager[None]:
    """Writes of the block are not a job's (a purge a handler makes is the user's erasure,
    not a derived write: it must not be refused for having deleted its own job)."""
    return fenced(None)


def current_fence() -> Fence | None:
    """The claim the current job's writes are checked against; ``None`` outside a job."""
    return _FENCE.get()


def new_lease_token() -> str:
    return uuid4().hex


def retry_delay(
    attempts: int, *, base_seconds: float = 2.0, cap_seconds: float = 600.0
) -> timedelta:
    """Exponential backoff: ``min(cap, base · 2^(attempts-1))``."""
    return timedelta(seconds=min(cap_seconds, base_seconds * 2 ** max(0, attempts - 1)))


_GUARD: ContextVar[Callable[[], None] | None] = ContextVar("memstrata_job_lease", default=None)


@contextmanager
def lease_guard(check: Callable[[], None]) -> Iterator[None]:
    """Make ``check`` the current job's lease check (the worker sets it around a handler)."""
    token = _GUARD.set(check)
    try:
        yield
    finally:
        _GUARD.reset(token)


def check_lease() -> None:
    """Raise :class:`LeaseLostError` if the job being run has lost its lease (a handler
    calls it between steps, so a worker that stalled past its lease stops instead of working
    on beside the new holder), :class:`JobRevokedError` once a write of it was refused
    because a purge took it back. Outside a job it does nothing."""
    check = _GUARD.get()
    if check is not None:
        check()
