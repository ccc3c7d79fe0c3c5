"""The job queue (outbox) in SQL: enqueue, lease-based claiming, renewal, finish, fail, list.

A claim is a lease, not a lock: claimed jobs become ``running`` with ``lease_until`` and a
fresh ``lease_token``, and a ``running`` job whose lease has expired is claimable again.
That is how work survives a worker killed with ``kill -9``: nothing has to notice the
death, the lease just runs out. The holder renews the lease while it works (a heartbeat);
finishing, failing and renewing name the token, so a worker whose lease was taken over can
no longer change the job (fencing). Attempts are counted at claim time, so a job that kills
its worker still uses up retries.

One user's jobs never run at once: a claim takes jobs of *one* user (the one whose job is
due first) and only if no other job of that user is held under a live lease. Jobs of one
user touch the same clusters and summaries, so serialising them is what keeps them from
failing on each other's writes; different users' jobs still run in parallel.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from ...clock import later
from ...errors import NotFoundError, ValidationError
from ...jobs import Job, JobStatus, LeaseLostError, job_status, new_lease_token
from ...traces import PurgeCount
from .codec import decode_time, encode_time
from .failures import duplicate

__all__ = [
    "JOB_COLUMNS",
    "claim_jobs",
    "count_open",
    "enqueue",
    "fail_job",
    "finish_job",
    "give_back_job",
    "holds_claim",
    "job_from_row",
    "job_row",
    "list_jobs",
    "renew_leases",
    "sweep_done",
    "take_back_claims",
]

JOB_COLUMNS = (
    "id, kind, tenant, user, agent, session, payload, created_at, run_after, status, "
    "attempts, last_error, lease_until, dedup_key, lease_token"
)
_OPEN = (JobStatus.PENDING.value, JobStatus.RUNNING.value)
_RUNNING = JobStatus.RUNNING.value


def job_row(job: Job) -> tuple[Any, ...]:
    """A job as the queue's column values (``JOB_COLUMNS`` order); shared with PostgreSQL."""
    try:
        payload = json.dumps(dict(job.payload), ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"job {job.id!r} payload is not JSON-serialisable: {exc}") from None
    return (
        job.id,
        job.kind,
        job.tenant,
        job.user,
        job.agent,
        job.session,
        payload,
        encode_time(job.created_at),
        encode_time(job.run_after),
        JobStatus(job.status).value,
        job.attempts,
        job.last_error,
        encode_time(job.lease_until),
        job.dedup_key,
        job.lease_token,
    )


def job_from_row(row: Any) -> Job:
    """A job from a row read by column name (sqlite3.Row or a psycopg dict row)."""
    created, run_after = decode_time(row["created_at"]), decode_time(row["run_after"])
    if created is None or run_after is None:  # NOT NULL columns
        raise ValidationError(f"job {row['id']!r} has no times; the database is damaged")
    return Job(
        id=row["id"],
        kind=row["kind"],
        tenant=row["tenant"],
        user=row["user"],
        payload=json.loads(row["payload"]),
        created_at=created,
        run_after=run_after,
        agent=row["agent"],
        session=row["session"],
        status=JobStatus(row["status"]),
        attempts=row["attempts"],
        last_error=row["last_error"],
        lease_until=decode_time(row["lease_until"]),
        dedup_key=row["dedup_key"],
        lease_token=row["lease_token"],
    )


def enqueue(conn: sqlite3.Connection, jobs: Sequence[Job]) -> None:
    """Add jobs; one whose ``dedup_key`` matches an open job of the same user is skipped."""
    for job in jobs:
        if (
            job.dedup_key is not None
            and conn.execute(
                "SELECT 1 FROM jobs WHERE tenant = ? AND user = ? AND dedup_key = ? "
                "AND status IN (?, ?)",
                (job.tenant, job.user, job.dedup_key, *_OPEN),
            ).fetchone()
        ):
            continue
        try:
            conn.execute(
                f"INSERT INTO jobs ({JOB_COLUMNS}) VALUES ({', '.join('?' * 15)})", job_row(job)
            )
        except sqlite3.IntegrityError as exc:
            if not duplicate(exc):  # a trigger or another constraint: a StoreError
                raise
            raise ValidationError(
                f"job id {job.id!r} exists already; give each job a new id"
            ) from None


def _claimable(tenant: str | None, user: str | None, session: str | None) -> tuple[str, list[Any]]:
    """Jobs that are due (pending and due, or running under an expired lease) of users
    with no job held under a live lease. Parameters: ``due``, ``now``, ``now``."""
    sql = (
        "((j.status = ? AND j.run_after <= ?) OR (j.status = ? AND j.lease_until <= ?)) "
        "AND NOT EXISTS (SELECT 1 FROM jobs b WHERE b.tenant = j.tenant AND b.user = j.user "
        "AND b.status = ? AND b.lease_until > ?)"
    )
    args: list[Any] = []
    for column, value in (("tenant", tenant), ("user", user), ("session", session)):
        if value is not None:
            sql += f" AND j.{column} = ?"
            args.append(value)
    # Redundant with the first line, but it lets SQLite read only the user's open jobs
    # through jobs_scope (tenant, user, status) instead of every job the user ever had
    # (a flush in a session of 10,000 turns otherwise scanned 10,000 finished jobs).
    sql += " AND j.status IN (?, ?)"
    args += [JobStatus.PENDING.value, _RUNNING]
    return sql, args


def claim_jobs(
    conn: sqlite3.Connection,
    now: datetime,
    *,
    limit: int,
    lease_seconds: float,
    tenant: str | None,
    user: str | None,
    session: str | None,
    due_before: datetime | None = None,
    purges: PurgeCount | None = None,
) -> list[Job]:
    """Lease up to ``limit`` due jobs of one user under a new token (run in the caller's
    ``BEGIN IMMEDIATE`` transaction, so two workers never claim the same job).
    ``purges``: given the store's count of purges, read by the statement that looks for
    the first due job (an idle worker polling forgets a purge made elsewhere at once:
    memstrata.traces)."""
    if limit <= 0:
        return []
    at = encode_time(now)
    due = encode_time(due_before or now)
    where, extra = _claimable(tenant, user, session)
    base = [JobStatus.PENDING.value, due, _RUNNING, at, _RUNNING, at, *extra]
    first = conn.execute(
        "SELECT (SELECT generation FROM scope_generation WHERE scope_tok = 'purges') "
        "AS purges, f.tenant, f.user FROM (SELECT 1) LEFT JOIN "
        f"(SELECT j.tenant, j.user FROM jobs j WHERE {where} "
        "ORDER BY j.run_after, j.created_at, j.id LIMIT 1) f",
        base,
    ).fetchone()
    if purges is not None:
        purges.read(int(first["purges"] or 0))
    if first["tenant"] is None:
        return []
    rows = conn.execute(
        f"SELECT j.id FROM jobs j WHERE {where} AND j.tenant = ? AND j.user = ? "
        "ORDER BY j.run_after, j.created_at, j.id LIMIT ?",
        [*base, first["tenant"], first["user"], limit],
    ).fetchall()
    token = new_lease_token()
    lease = encode_time(later(now, timedelta(seconds=lease_seconds)))
    claimed: list[Job] = []
    for row in rows:
        conn.execute(
            "UPDATE jobs SET status = ?, lease_until = ?, lease_token = ?, "
            "attempts = attempts + 1 WHERE id = ?",
            (_RUNNING, lease, token, row["id"]),
        )
        claimed.append(
            job_from_row(
                conn.execute(
                    f"SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?", (row["id"],)
                ).fetchone()
            )
        )
    return claimed


def renew_leases(conn: sqlite3.Connection, token: str, until: datetime) -> list[str]:
    """Extend the lease of every job still held under ``token``; returns their ids (a job
    missing from the answer was taken over, finished or purged)."""
    conn.execute(
        "UPDATE jobs SET lease_until = ? WHERE lease_token = ? AND status = ?",
        (encode_time(until), token, _RUNNING),
    )
    return [
        r["id"]
        for r in conn.execute(
            "SELECT id FROM jobs WHERE lease_token = ? AND status = ? ORDER BY id",
            (token, _RUNNING),
        )
    ]


def _fenced(
    conn: sqlite3.Connection, job_id: str, token: str | None, sql: str, args: Sequence[Any]
) -> None:
    """Apply an update to a job, only while ``token`` still holds it (if given)."""
    if token is None:
        cur = conn.execute(f"{sql} WHERE id = ?", (*args, job_id))
    else:
        cur = conn.execute(
            f"{sql} WHERE id = ? AND lease_token = ? AND status = ?",
            (*args, job_id, token, _RUNNING),
        )
    if cur.rowcount:
        return
    if conn.execute("SELECT 1 FROM jobs WHERE id = ?", (job_id,)).fetchone() is None:
        raise NotFoundError(f"no job {job_id!r}; it may have been purged with its user")
    raise LeaseLostError(
        f"job {job_id!r} is no longer held under this lease (it expired and "
        "another worker claimed the job); this result is not recorded"
    )


def finish_job(conn: sqlite3.Connection, job_id: str, token: str | None = None) -> None:
    _fenced(
        conn,
        job_id,
        token,
        "UPDATE jobs SET status = ?, lease_until = NULL, lease_token = NULL",
        (JobStatus.DONE.value,),
    )


def fail_job(
    conn: sqlite3.Connection,
    job_id: str,
    error: str,
    retry_at: datetime | None,
    token: str | None = None,
) -> None:
    if retry_at is None:
        _fenced(
            conn,
            job_id,
            token,
            "UPDATE jobs SET status = ?, last_error = ?, lease_until = NULL, lease_token = NULL",
            (JobStatus.FAILED.value, error),
        )
    else:
        _fenced(
            conn,
            job_id,
            token,
            "UPDATE jobs SET status = ?, last_error = ?, "
            "lease_until = NULL, lease_token = NULL, run_after = ?",
            (JobStatus.PENDING.value, error, encode_time(retry_at)),
        )


def give_back_job(
    conn: sqlite3.Connection, job_id: str, reason: str, run_at: datetime, token: str | None
) -> None:
    """A claimed job not run (its run cancelled, the worker stopping) pending again at
    ``run_at``, with the attempt its claim counted given back: a job given back at every
    shutdown must not have used up its retries before it ever failed."""
    _fenced(
        conn,
        job_id,
        token,
        "UPDATE jobs SET status = ?, last_error = ?, lease_until = NULL, lease_token = NULL, "
        "run_after = ?, attempts = max(attempts - 1, 0)",
        (JobStatus.PENDING.value, reason, encode_time(run_at)),
    )


# The job's claim still stands: its row exists and is held under the token (by primary key).
HOLDS_CLAIM = "SELECT 1 FROM jobs WHERE id = ? AND lease_token = ? AND status = ?"


def holds_claim(conn: sqlite3.Connection, job_id: str, token: str) -> bool:
    """Whether the job is still held under ``token`` (a write transaction of the job checks
    it first: :class:`~memstrata.jobs.Fence`)."""
    return conn.execute(HOLDS_CLAIM, (job_id, token, _RUNNING)).fetchone() is not None


def take_back_claims(conn: sqlite3.Connection, tenant: str, user: str, keep: str | None) -> int:
    """A purge of some of the user's records: the user's running jobs (but those of the
    claim ``keep``, the purging job's own) are pending again at once, their attempt given
    back (due as they were: a claimed job was due). Whatever they read may be gone: they
    run again on the records left, and every write they would still make under the old
    claim is refused (:class:`~memstrata.jobs.Fence`)."""
    return conn.execute(
        "UPDATE jobs SET status = ?, lease_until = NULL, lease_token = NULL, "
        "attempts = max(attempts - 1, 0) WHERE tenant = ? AND user = ? AND status = ? "
        "AND lease_token IS NOT ?",
        (JobStatus.PENDING.value, tenant, user, _RUNNING, keep),
    ).rowcount


def count_open(
    conn: sqlite3.Connection, tenant: str | None, user: str | None, session: str | None
) -> int:
    """Jobs not finished yet (pending or running), optionally of one tenant/user/session."""
    sql = "SELECT count(*) FROM jobs WHERE status IN (?, ?)"
    args: list[Any] = [*_OPEN]
    for column, value in (("tenant", tenant), ("user", user), ("session", session)):
        if value is not None:
            sql += f" AND {column} = ?"
            args.append(value)
    return int(conn.execute(sql, args).fetchone()[0])


def sweep_done(conn: sqlite3.Connection, before: datetime, limit: int) -> int:
    """Delete up to ``limit`` done jobs due before ``before``, the oldest first (the
    retention of finished jobs, ``maintain``'s sweep). Read on ``jobs_ready (status,
    run_after)``: the work is the rows deleted, not the table. A job still pending or
    running is never one (run in the caller's ``BEGIN IMMEDIATE``: a claim or a finish
    is before or after it, whole)."""
    if limit <= 0:
        return 0
    return conn.execute(
        "DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE status = ? AND run_after < ? "
        "ORDER BY run_after LIMIT ?)",
        (JobStatus.DONE.value, encode_time(before), limit),
    ).rowcount


def list_jobs(conn: sqlite3.Connection, tenant: str, user: str, status: str | None) -> list[Job]:
    sql = f"SELECT {JOB_COLUMNS} FROM jobs WHERE tenant = ? AND user = ?"
    args: list[Any] = [tenant, user]
    if status is not None:
        sql += " AND status = ?"
        args.append(job_status(status).value)
    return [job_from_row(r) for r in conn.execute(sql + " ORDER BY created_at, id", args)]
