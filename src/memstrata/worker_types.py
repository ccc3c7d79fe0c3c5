"""The job worker's values (one class for ``memstrata.worker`` and ``memstrata._async.worker``)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["DEFAULT_LEASE_SECONDS", "RunReport"]

DEFAULT_LEASE_SECONDS = 15.0


@dataclass(slots=True)
class RunReport:
    done: int = 0
    retried: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    lost: int = 0  # jobs whose lease was taken over while this worker held them
    waiting: int = 0  # jobs still held by another worker when a timed-out flush returned
    # jobs a purge took back while they ran (deleted with their user, or queued again to
    # run on the records left): stopped, their writes since refused; not failures
    revoked: int = 0
