"""The job queue (outbox) in SQL: enqueue, lease-based claiming, finish, fail, list.

A claim is a lease, not a lock: claimed jobs become ``running`` with ``lease_until``, and a
``running`` job whose lease has expired is claimable again. That is how work survives a
worker killed with ``kill -9``: nothing has to notice the death, the lease just runs out.
Attempts are counted at claim time, so a job that kills its worker still uses up retries.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from ...errors import NotFoundError, ValidationError
from ...jobs import Job, JobStatus, job_status
from .codec import decode_time, encode_time

__all__ = ["claim_jobs", "enqueue", "fail_job", "finish_job", "list_jobs"]

_COLUMNS = ("id, kind, tenant, user, agent, session, payload, created_at, run_after, status, "
            "attempts, last_error, lease_until, dedup_key")
_OPEN = (JobStatus.PENDING.value, JobStatus.RUNNING.value)


def _row(job: Job) -> tuple[Any, ...]:
    try:
        payload = json.dumps(dict(job.payload), ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"job {job.id!r} payload is not JSON-serialisable: {exc}") from None
    return (job.id, job.kind, job.tenant, job.user, job.agent, job.session, payload,
            encode_time(job.created_at), encode_time(job.run_after), JobStatus(job.status).value,
            job.attempts, job.last_error, encode_time(job.lease_until), job.dedup_key)


def _job(row: sqlite3.Row) -> Job:
    created, run_after = decode_time(row["created_at"]), decode_time(row["run_after"])
    if created is None or run_after is None:  # NOT NULL columns
        raise ValidationError(f"job {row['id']!r} has no times; the database is damaged")
    return Job(
        id=row["id"], kind=row["kind"], tenant=row["tenant"], user=row["user"],
        payload=json.loads(row["payload"]), created_at=created, run_after=run_after,
        agent=row["agent"], session=row["session"], status=JobStatus(row["status"]),
        attempts=row["attempts"], last_error=row["last_error"],
        lease_until=decode_time(row["lease_until"]), dedup_key=row["dedup_key"],
    )


def enqueue(conn: sqlite3.Connection, jobs: Sequence[Job]) -> None:
    """Add jobs; one whose ``dedup_key`` matches an open job of the same user is skipped."""
    for job in jobs:
        if job.dedup_key is not None and conn.execute(
            "SELECT 1 FROM jobs WHERE tenant = ? AND user = ? AND dedup_key = ? "
            "AND status IN (?, ?)", (job.tenant, job.user, job.dedup_key, *_OPEN),
        ).fetchone():
            continue
        try:
            conn.execute(f"INSERT INTO jobs ({_COLUMNS}) VALUES ({', '.join('?' * 14)})",
                         _row(job))
        except sqlite3.IntegrityError:
            raise ValidationError(
                f"job id {job.id!r} exists already; give each job a new id"
            ) from None


def claim_jobs(conn: sqlite3.Connection, now: datetime, *, limit: int, lease_seconds: float,
               tenant: str | None, user: str | None, session: str | None,
               due_before: datetime | None = None) -> list[Job]:
    at = encode_time(now)
    due = encode_time(due_before or now)
    sql = (f"SELECT {_COLUMNS} FROM jobs WHERE ((status = ? AND run_after <= ?) "
           "OR (status = ? AND lease_until <= ?))")
    args: list[Any] = [JobStatus.PENDING.value, due, JobStatus.RUNNING.value, at]
    for column, value in (("tenant", tenant), ("user", user), ("session", session)):
        if value is not None:
            sql += f" AND {column} = ?"
            args.append(value)
    sql += " ORDER BY run_after, created_at, id LIMIT ?"
    args.append(max(0, limit))
    lease = now + timedelta(seconds=lease_seconds)
    claimed: list[Job] = []
    for row in conn.execute(sql, args).fetchall():
        conn.execute("UPDATE jobs SET status = ?, lease_until = ?, attempts = attempts + 1 "
                     "WHERE id = ?", (JobStatus.RUNNING.value, encode_time(lease), row["id"]))
        claimed.append(_job(conn.execute(f"SELECT {_COLUMNS} FROM jobs WHERE id = ?",
                                         (row["id"],)).fetchone()))
    return claimed


def finish_job(conn: sqlite3.Connection, job_id: str) -> None:
    cur = conn.execute("UPDATE jobs SET status = ?, lease_until = NULL WHERE id = ?",
                       (JobStatus.DONE.value, job_id))
    if cur.rowcount == 0:
        raise NotFoundError(f"no job {job_id!r}; it may have been purged with its user")


def fail_job(conn: sqlite3.Connection, job_id: str, error: str,
             retry_at: datetime | None) -> None:
    if retry_at is None:
        cur = conn.execute("UPDATE jobs SET status = ?, last_error = ?, lease_until = NULL "
                           "WHERE id = ?", (JobStatus.FAILED.value, error, job_id))
    else:
        cur = conn.execute(
            "UPDATE jobs SET status = ?, last_error = ?, lease_until = NULL, run_after = ? "
            "WHERE id = ?", (JobStatus.PENDING.value, error, encode_time(retry_at), job_id))
    if cur.rowcount == 0:
        raise NotFoundError(f"no job {job_id!r}; it may have been purged with its user")


def list_jobs(conn: sqlite3.Connection, tenant: str, user: str,
              status: str | None) -> list[Job]:
    sql = f"SELECT {_COLUMNS} FROM jobs WHERE tenant = ? AND user = ?"
    args: list[Any] = [tenant, user]
    if status is not None:
        sql += " AND status = ?"
        args.append(job_status(status).value)
    return [_job(r) for r in conn.execute(sql + " ORDER BY created_at, id", args)]
