"""Background jobs: durable units of deferred work kept in the store's outbox."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any
from uuid import uuid4

from .errors import ConflictError

__all__ = [
    "Job",
    "JobStatus",
    "LeaseLostError",
    "check_lease",
    "job_status",
    "lease_guard",
    "new_lease_token",
    "retry_delay",
]


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
    on beside the new holder). Outside a job it does nothing."""
    check = _GUARD.get()
    if check is not None:
        check()
