"""Maintenance's values: one definition for ``memstrata.maintenance`` and
``memstrata._async.maintenance`` (see :mod:`memstrata.maintenance`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .errors import ValidationError
from .jobs import Job
from .records import new_id
from .scope import Scope

__all__ = [
    "MAINTAIN",
    "LogEntry",
    "MaintenanceReport",
    "Retention",
    "check_interval",
    "make_maintain_job",
]

MAINTAIN = "maintain"


@dataclass(frozen=True, slots=True)
class Retention:
    """Days after which records are purged for real (``None``: kept).

    Seed 002's table purges conversation turns 30 days after a summary covered them
    (:meth:`seed_002`). That is not the default: measured on LoCoMo (conversations 0-1), a
    pass 30 days after ingest purged 570 of 688 turns and answer recall in context fell from
    85.0% to 76.6% (4,000-token budget) — a summary does not keep the details questions ask
    about. By default turns are kept; procedural patterns go after 90 days unused.

    ``done_jobs_days``: finished (``done``) background jobs of every user are deleted this
    many days after they were due (jobs32; before, every job stayed until its user was
    purged: a row per job forever). A job runs once due, so in practice it is that long
    after it ran, unless it waited in a backlog. 7 days: a week of ``list_jobs(status=
    "done")`` to look back on (a weekend's incident seen on Monday); what a job wrote
    stays, only its queue row goes. Failed jobs (gave up after their retries) are never
    swept: they are what an operator has to look at (``stats().failed_jobs``) and may
    queue again; they go with their user's purge. Pending and running jobs are never
    swept."""

    messages_after_summary_days: float | None = None
    procedures_days: float | None = 90.0
    done_jobs_days: float | None = 7.0

    @classmethod
    def seed_002(cls) -> Retention:
        """Seed 002's retention: turns 30 days after they were summarised, procedures 90."""
        return cls(messages_after_summary_days=30.0, procedures_days=90.0)

    def __post_init__(self) -> None:
        for name in ("messages_after_summary_days", "procedures_days", "done_jobs_days"):
            value = getattr(self, name)
            if value is None:
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value <= 0
            ):
                raise ValidationError(
                    f"retention {name} must be a number of days > 0 (or None to keep "
                    f"forever), got {value!r}"
                )


@dataclass(frozen=True, slots=True)
class LogEntry:
    record_id: str
    action: str  # forget | downgrade | purge | merge | refresh
    policy: str
    reason: str
    score: float
    at: datetime


@dataclass(slots=True)
class MaintenanceReport:
    scope: str
    policy: str
    dry_run: bool
    scanned: int = 0
    forgotten: int = 0
    downgraded: int = 0
    preserved: int = 0
    purged: int = 0
    merged: int = 0
    refreshed: int = 0  # stale summaries rewritten (or forgotten: no turn left)
    rederived: int = 0  # other derived records re-derived from what is left (or forgotten)
    decay_updated: int = 0
    skipped: int = 0  # changed by someone else during the run (ConflictError): next run
    # rows of meta deleted by the store-wide sweep of past days' and windows' counters
    # (session 30; every user's, not only this one's: the pass's last step)
    counters_swept: int = 0
    # done jobs deleted by the store-wide retention of finished jobs (jobs32; every user's,
    # ``Retention.done_jobs_days`` after they were due)
    jobs_swept: int = 0
    log: list[LogEntry] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "scope": self.scope,
            "policy": self.policy,
            "dry_run": self.dry_run,
            "scanned": self.scanned,
            "forgotten": self.forgotten,
            "downgraded": self.downgraded,
            "preserved": self.preserved,
            "purged": self.purged,
            "merged": self.merged,
            "refreshed": self.refreshed,
            "rederived": self.rederived,
            "decay_updated": self.decay_updated,
            "skipped": self.skipped,
            "counters_swept": self.counters_swept,
            "jobs_swept": self.jobs_swept,
        }


def check_interval(every: object) -> timedelta | None:
    if every is None:
        return None
    if not isinstance(every, timedelta) or every <= timedelta(0):
        raise ValidationError(
            f"maintenance_every must be a positive datetime.timedelta "
            f"(or None for no periodic maintenance), got {every!r}"
        )
    return every


def make_maintain_job(scope: Scope, run_after: datetime, now: datetime) -> Job:
    """The periodic per-user maintenance job the worker runs."""
    return Job(
        id=new_id(),
        kind=MAINTAIN,
        tenant=scope.tenant,
        user=scope.user,
        payload={},
        created_at=now,
        run_after=run_after,
    )
