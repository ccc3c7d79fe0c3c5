"""The job queue in PostgreSQL: lease-based claims with ``FOR UPDATE SKIP LOCKED``.

Claiming locks the chosen rows and skips rows another worker is claiming at that moment, so
any number of worker processes share one queue and no job is leased to two of them at once.
A claim is a lease: a ``running`` job whose lease expired (its worker died) is claimable
again. Enqueuing sends ``NOTIFY`` on the store's channel at commit, which wakes listening
workers at once instead of at their next poll.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import psycopg

from ...errors import NotFoundError, ValidationError
from ...jobs import Job, JobStatus, job_status
from ..sqlite.codec import decode_time, encode_time

__all__ = ["channel", "claim_jobs", "enqueue", "fail_job", "finish_job", "list_jobs"]

_COLUMNS = ('id, kind, tenant, "user", agent, session, payload, created_at, run_after, '
            'status, attempts, last_error, lease_until, dedup_key')
_OPEN = [JobStatus.PENDING.value, JobStatus.RUNNING.value]


def channel(schema: str) -> str:
    return f"memstrata_jobs_{schema}"


def _row(job: Job) -> tuple[Any, ...]:
    try:
        payload = json.dumps(dict(job.payload), ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"job {job.id!r} payload is not JSON-serialisable: {exc}") from None
    return (job.id, job.kind, job.tenant, job.user, job.agent, job.session, payload,
            encode_time(job.created_at), encode_time(job.run_after), JobStatus(job.status).value,
            job.attempts, job.last_error, encode_time(job.lease_until), job.dedup_key)


def _job(row: dict[str, Any]) -> Job:
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


def enqueue(conn: psycopg.Connection[Any], jobs: Sequence[Job], schema: str) -> None:
    """Add jobs; one whose ``dedup_key`` matches an open job of the same user is skipped."""
    rows = [_row(j) for j in jobs]  # validate every payload before writing any
    added = 0
    for job, row in zip(jobs, rows, strict=True):
        if job.dedup_key is not None:
            # Serialise enqueuers of one dedup key, so two processes cannot both add it.
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 7))",
                         (f"{job.tenant}\x1f{job.user}\x1f{job.dedup_key}",))
            if conn.execute('SELECT 1 FROM jobs WHERE tenant = %s AND "user" = %s AND '
                            "dedup_key = %s AND status = ANY(%s)",
                            (job.tenant, job.user, job.dedup_key, _OPEN)).fetchone():
                continue
        try:
            with conn.transaction():
                conn.execute(f"INSERT INTO jobs ({_COLUMNS}) VALUES "
                             f"({', '.join(['%s'] * 14)})", row)
        except psycopg.errors.UniqueViolation:
            raise ValidationError(
                f"job id {job.id!r} exists already; give each job a new id") from None
        added += 1
    if added:
        conn.execute(f"NOTIFY {channel(schema)}")


def claim_jobs(conn: psycopg.Connection[Any], now: datetime, *, limit: int,
               lease_seconds: float, tenant: str | None, user: str | None,
               session: str | None, due_before: datetime | None = None) -> list[Job]:
    at = encode_time(now)
    due = encode_time(due_before or now)
    where = ("((status = 'pending' AND run_after <= %s) "
             "OR (status = 'running' AND lease_until <= %s))")
    args: list[Any] = [due, at]
    for column, value in (("tenant", tenant), ('"user"', user), ("session", session)):
        if value is not None:
            where += f" AND {column} = %s"
            args.append(value)
    lease = encode_time(now + timedelta(seconds=lease_seconds))
    rows = conn.execute(
        f"UPDATE jobs SET status = 'running', lease_until = %s, attempts = attempts + 1 "
        f"WHERE id IN (SELECT id FROM jobs WHERE {where} ORDER BY run_after, created_at, id "
        f"LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING {_COLUMNS}",
        [lease, *args, max(0, limit)]).fetchall()
    jobs = [_job(r) for r in rows]
    return sorted(jobs, key=lambda j: (encode_time(j.run_after), encode_time(j.created_at),
                                       j.id.encode()))


def finish_job(conn: psycopg.Connection[Any], job_id: str) -> None:
    cur = conn.execute("UPDATE jobs SET status = 'done', lease_until = NULL WHERE id = %s",
                       (job_id,))
    if cur.rowcount == 0:
        raise NotFoundError(f"no job {job_id!r}; it may have been purged with its user")


def fail_job(conn: psycopg.Connection[Any], job_id: str, error: str,
             retry_at: datetime | None) -> None:
    if retry_at is None:
        cur = conn.execute("UPDATE jobs SET status = 'failed', last_error = %s, "
                           "lease_until = NULL WHERE id = %s", (error, job_id))
    else:
        cur = conn.execute(
            "UPDATE jobs SET status = 'pending', last_error = %s, lease_until = NULL, "
            "run_after = %s WHERE id = %s", (error, encode_time(retry_at), job_id))
    if cur.rowcount == 0:
        raise NotFoundError(f"no job {job_id!r}; it may have been purged with its user")


def list_jobs(conn: psycopg.Connection[Any], tenant: str, user: str,
              status: str | None) -> list[Job]:
    sql = f'SELECT {_COLUMNS} FROM jobs WHERE tenant = %s AND "user" = %s'
    args: list[Any] = [tenant, user]
    if status is not None:
        sql += " AND status = %s"
        args.append(job_status(status).value)
    return [_job(r) for r in conn.execute(sql + " ORDER BY created_at, id", args).fetchall()]
