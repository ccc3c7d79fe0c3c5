"""Background jobs: durable units of deferred work kept in the store's outbox."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

__all__ = ["Job", "JobStatus", "job_status", "retry_delay"]


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


def retry_delay(attempts: int, *, base_seconds: float = 2.0,
                cap_seconds: float = 600.0) -> timedelta:
    """Exponential backoff: ``min(cap, base · 2^(attempts-1))``."""
    return timedelta(seconds=min(cap_seconds, base_seconds * 2 ** max(0, attempts - 1)))
