"""The job worker's values (one class for ``memstrata.worker`` and ``memstrata._async.worker``)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["DEFAULT_LEASE_SECONDS", "RunReport"]

DEFAULT_LEASE_SECONDS = 15.0


@dataclass(slots=True)
class RunReport:
    """What a run of the job queue did. Every job it claimed ends in exactly one of
    ``done``, ``retried``, ``failed``, ``lost``, ``revoked`` and ``given_back``, so they add
    up to ``claimed`` (a job claimed twice in one run, run again after a purge took it
    back, counts twice)."""

    done: int = 0
    retried: int = 0  # failed this time, queued again for later (its error in ``errors``)
    failed: int = 0  # failed for good (kept for inspection and manual retry)
    errors: list[str] = field(default_factory=list)
    # jobs whose lease ran out while this worker held them (its heartbeat could not renew
    # it in time): another worker may run them; their result here is not recorded
    lost: int = 0
    waiting: int = 0  # jobs still held by another worker when a timed-out flush returned
    # jobs a purge took back (deleted with their user, or queued again to run on the
    # records left), before they started or while they ran: stopped, any write they would
    # still make refused; not failures
    revoked: int = 0
    given_back: int = 0  # claimed but not run (the worker stopped first): pending again
    claimed: int = 0
