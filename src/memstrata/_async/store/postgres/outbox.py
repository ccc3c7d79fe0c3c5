"""The job queue in PostgreSQL: lease-based claims with ``FOR UPDATE SKIP LOCKED``.

Claiming locks the chosen rows and skips rows another worker is claiming at that moment, so
any number of worker processes share one queue and no job is leased to two of them at once.
A claim is a lease: a ``running`` job whose lease expired (its worker died) is claimable
again. Each claim has a ``lease_token``; the holder renews the lease while it works, and
finishing, failing and renewing name the token, so a worker whose lease was taken over can
no longer change the job (fencing). One user's jobs never run at once: a claim takes jobs of
one user, under a transaction-level advisory lock on that user, and only if no job of that
user is held under a live lease (the SQLite reference's rule, made safe across processes).
Enqueuing sends ``NOTIFY`` on the store's channel at commit, which wakes listening
workers at once instead of at their next poll.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import psycopg

from memstrata._async.store.postgres.pipeline import begin_transaction
from memstrata.clock import later
from memstrata.errors import NotFoundError, ValidationError
from memstrata.jobs import Job, JobStatus, LeaseLostError, job_status, new_lease_token
from memstrata.store.sqlite.codec import encode_time
from memstrata.store.sqlite.outbox import job_from_row, job_row
from memstrata.traces import PurgeCount

__all__ = [
    "JOB_COLUMNS",
    "begin_holding_claim",
    "channel",
    "claim_jobs",
    "count_open",
    "enqueue",
    "fail_job",
    "finish_job",
    "give_back_job",
    "list_jobs",
    "renew_leases",
    "sweep_done",
    "take_back_claims",
]

JOB_COLUMNS = (
    'id, kind, tenant, "user", agent, session, payload, created_at, run_after, '
    "status, attempts, last_error, lease_until, dedup_key, lease_token"
)
_OPEN = [JobStatus.PENDING.value, JobStatus.RUNNING.value]


def channel(schema: str) -> str:
    return f"memstrata_jobs_{schema}"


async def enqueue(conn: psycopg.AsyncConnection[Any], jobs: Sequence[Job], schema: str) -> None:
    """Add jobs; one whose ``dedup_key`` matches an open job of the same user is skipped."""
    rows = [job_row(j) for j in jobs]  # validate every payload before writing any
    added = 0
    for job, row in zip(jobs, rows, strict=True):
        if job.dedup_key is not None:
            # Serialise enqueuers of one dedup key, so two processes cannot both add it.
            await conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 7))",
                (f"{job.tenant}\x1f{job.user}\x1f{job.dedup_key}",),
            )
            if await (
                await conn.execute(
                    'SELECT 1 FROM jobs WHERE tenant = %s AND "user" = %s AND '
                    "dedup_key = %s AND status = ANY(%s)",
                    (job.tenant, job.user, job.dedup_key, _OPEN),
                )
            ).fetchone():
                continue
        try:
            async with conn.transaction():
                await conn.execute(
                    f"INSERT INTO jobs ({JOB_COLUMNS}) VALUES ({', '.join(['%s'] * 15)})", row
                )
        except psycopg.errors.UniqueViolation:
            raise ValidationError(
                f"job id {job.id!r} exists already; give each job a new id"
            ) from None
        added += 1
    if added:
        await conn.execute(f"NOTIFY {channel(schema)}")


_RUNNING = JobStatus.RUNNING.value
_CANDIDATE_USERS = 16  # users tried per claim when others are being claimed at that moment


async def claim_jobs(
    conn: psycopg.AsyncConnection[Any],
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
    """Lease up to ``limit`` due jobs of one user under a new token (in the caller's
    transaction). The user is locked with a transaction-level advisory lock before its
    live leases are checked, so two workers never hold jobs of one user at once.
    ``purges``: given the store's count of purges, read by the statement that looks for
    due jobs (an idle worker polling forgets a purge made elsewhere at once:
    memstrata.traces)."""
    if limit <= 0:
        return []
    at = encode_time(now)
    due = encode_time(due_before or now)
    where = (
        "((j.status = 'pending' AND j.run_after <= %s) "
        "OR (j.status = 'running' AND j.lease_until <= %s))"
    )
    args: list[Any] = [due, at]
    for column, value in (("tenant", tenant), ('"user"', user), ("session", session)):
        if value is not None:
            where += f" AND j.{column} = %s"
            args.append(value)
    # One row more, first, with the count of purges (no job columns): one round trip.
    rows = await (
        await conn.execute(
            'SELECT NULL AS tenant, NULL AS "user", NULL AS due, (SELECT generation FROM '
            "scope_generation WHERE scope_tok = 'purges') AS purges UNION ALL (SELECT "
            f'j.tenant, j."user", min(j.run_after) AS due, NULL FROM jobs j WHERE {where} '
            f'GROUP BY j.tenant, j."user" ORDER BY due, j.tenant, j."user" LIMIT %s)',
            [*args, _CANDIDATE_USERS],
        )
    ).fetchall()
    users = sorted(
        (r for r in rows if r["tenant"] is not None),
        key=lambda r: (r["due"], r["tenant"], r["user"]),
    )
    if purges is not None:
        purges.read(max((int(r["purges"] or 0) for r in rows if r["tenant"] is None), default=0))
    for u in users:
        t, usr = u["tenant"], u["user"]
        locked = await (
            await conn.execute(
                "SELECT pg_try_advisory_xact_lock(hashtextextended(%s, 11)) AS locked",
                (f"{t}\x1f{usr}",),
            )
        ).fetchone()
        if locked is None or not locked["locked"]:
            continue  # another worker is claiming this user's jobs right now
        if await (
            await conn.execute(
                'SELECT 1 FROM jobs WHERE tenant = %s AND "user" = %s AND '
                "status = 'running' AND lease_until > %s LIMIT 1",
                (t, usr, at),
            )
        ).fetchone():
            continue  # one of this user's jobs is running under a live lease
        token = new_lease_token()
        lease = encode_time(later(now, timedelta(seconds=lease_seconds)))
        # The batch is chosen once (a MATERIALIZED CTE) and its rows updated by key: as
        # ``id IN (SELECT ... LIMIT n FOR UPDATE SKIP LOCKED)`` the planner may run the
        # sub-select again per row (a semi-join), each run skipping the rows the statement
        # has just updated and taking the next, so nothing held the claim to ``limit``
        # (as the done-jobs sweep, session 33; tests/pg34/test_claim_limit.py).
        rows = await (
            await conn.execute(
                f"WITH batch AS MATERIALIZED (SELECT j.id AS picked FROM jobs j WHERE {where} "
                f'AND j.tenant = %s AND j."user" = %s ORDER BY j.run_after, j.created_at, j.id '
                f"LIMIT %s FOR UPDATE SKIP LOCKED) UPDATE jobs SET status = 'running', "
                "lease_until = %s, lease_token = %s, attempts = attempts + 1 FROM batch "
                f"WHERE jobs.id = batch.picked RETURNING {JOB_COLUMNS}",
                [*args, t, usr, limit, lease, token],
            )
        ).fetchall()
        if rows:
            return sorted(
                (job_from_row(r) for r in rows),
                key=lambda j: (encode_time(j.run_after), encode_time(j.created_at), j.id.encode()),
            )
    return []


async def renew_leases(
    conn: psycopg.AsyncConnection[Any], token: str, until: datetime
) -> list[str]:
    """Extend the lease of every job still held under ``token``; returns their ids."""
    rows = await (
        await conn.execute(
            "UPDATE jobs SET lease_until = %s WHERE lease_token = %s AND "
            "status = 'running' RETURNING id",
            (encode_time(until), token),
        )
    ).fetchall()
    return sorted(r["id"] for r in rows)


async def _fenced(
    conn: psycopg.AsyncConnection[Any],
    job_id: str,
    token: str | None,
    sql: str,
    args: Sequence[Any],
) -> None:
    if token is None:
        cur = await conn.execute(f"{sql} WHERE id = %s", (*args, job_id))
    else:
        cur = await conn.execute(
            f"{sql} WHERE id = %s AND lease_token = %s AND status = 'running'",
            (*args, job_id, token),
        )
    if cur.rowcount:
        return
    if await (await conn.execute("SELECT 1 FROM jobs WHERE id = %s", (job_id,))).fetchone() is None:
        raise NotFoundError(f"no job {job_id!r}; it may have been purged with its user")
    raise LeaseLostError(
        f"job {job_id!r} is no longer held under this lease (it expired and "
        "another worker claimed the job); this result is not recorded"
    )


async def finish_job(
    conn: psycopg.AsyncConnection[Any], job_id: str, token: str | None = None
) -> None:
    await _fenced(
        conn,
        job_id,
        token,
        "UPDATE jobs SET status = 'done', lease_until = NULL, lease_token = NULL",
        (),
    )


async def fail_job(
    conn: psycopg.AsyncConnection[Any],
    job_id: str,
    error: str,
    retry_at: datetime | None,
    token: str | None = None,
) -> None:
    if retry_at is None:
        await _fenced(
            conn,
            job_id,
            token,
            "UPDATE jobs SET status = 'failed', last_error = %s, "
            "lease_until = NULL, lease_token = NULL",
            (error,),
        )
    else:
        await _fenced(
            conn,
            job_id,
            token,
            "UPDATE jobs SET status = 'pending', last_error = %s, "
            "lease_until = NULL, lease_token = NULL, run_after = %s",
            (error, encode_time(retry_at)),
        )


async def give_back_job(
    conn: psycopg.AsyncConnection[Any],
    job_id: str,
    reason: str,
    run_at: datetime,
    token: str | None = None,
) -> None:
    """Pending again at ``run_at``, the claim's attempt given back (the SQLite reference)."""
    await _fenced(
        conn,
        job_id,
        token,
        "UPDATE jobs SET status = 'pending', last_error = %s, lease_until = NULL, "
        "lease_token = NULL, run_after = %s, attempts = greatest(attempts - 1, 0)",
        (reason, encode_time(run_at)),
    )


# FOR SHARE: conflicts with the purge's DELETE and with its UPDATE of the claim (FOR NO KEY
# UPDATE, which FOR KEY SHARE would let through), so the purge waits for this write to
# commit; a purge that came first makes this read wait for it and then find no row.
HOLDS_CLAIM = (
    "SELECT 1 FROM jobs WHERE id = %s AND lease_token = %s AND status = 'running' FOR SHARE"
)


async def begin_holding_claim(
    conn: psycopg.AsyncConnection[Any], job_id: str, token: str
) -> tuple[psycopg.AsyncTransaction, bool]:
    """Start a write transaction and check in it that the job is still held under
    ``token``, its row locked until the transaction ends (:class:`~memstrata.jobs.Fence`):
    the open transaction (the caller commits or rolls it back) and whether the claim
    stands. If this raises, nothing is left open.

    One round trip: ``BEGIN`` and :data:`HOLDS_CLAIM` are sent together (pipeline mode),
    the same statements in the same order as one after the other, so the purge's
    ``DELETE``/``UPDATE`` waits for this transaction as before; the check sent after
    ``BEGIN`` cost a round trip more per write transaction of a job (session 22). The
    transaction is made by :func:`pipeline.begin_transaction`, not by
    ``conn.transaction()``, which inside a pipeline syncs before and after ``BEGIN`` (two
    round trips more)."""
    tx = None
    try:
        async with conn.pipeline():
            tx = await begin_transaction(conn)
            cur = await conn.execute(HOLDS_CLAIM, (job_id, token))
        return tx, await cur.fetchone() is not None
    except BaseException as exc:
        if tx is not None:
            await tx.__aexit__(type(exc), exc, exc.__traceback__)
        raise


async def take_back_claims(
    conn: psycopg.AsyncConnection[Any], tenant: str, user: str, keep: str | None
) -> int:
    """The user's running jobs (but the claim ``keep``'s) pending again, their attempt given
    back; the first statement of a purge's transaction, so it waits for the writes under
    way under those claims and the purge's next statements see them (READ COMMITTED), and
    takes the job rows before any record row (a job's write locks them in that order too)."""
    cur = await conn.execute(
        "UPDATE jobs SET status = 'pending', lease_until = NULL, lease_token = NULL, "
        'attempts = greatest(attempts - 1, 0) WHERE tenant = %s AND "user" = %s '
        "AND status = 'running' AND lease_token IS DISTINCT FROM %s",
        (tenant, user, keep),
    )
    return int(cur.rowcount)


async def count_open(
    conn: psycopg.AsyncConnection[Any], tenant: str | None, user: str | None, session: str | None
) -> int:
    """Jobs not finished yet (pending or running), optionally of one tenant/user/session."""
    sql = "SELECT count(*) AS n FROM jobs WHERE status = ANY(%s)"
    args: list[Any] = [_OPEN]
    for column, value in (("tenant", tenant), ('"user"', user), ("session", session)):
        if value is not None:
            sql += f" AND {column} = %s"
            args.append(value)
    row = await (await conn.execute(sql, args)).fetchone()
    return int(row["n"]) if row is not None else 0


async def sweep_done(conn: psycopg.AsyncConnection[Any], before: datetime, limit: int) -> int:
    """Delete up to ``limit`` done jobs due before ``before``, the oldest first (the
    retention of finished jobs, ``maintain``'s sweep), read on the partial index
    ``jobs_done`` (step 30): the work is the rows deleted. Rows another transaction has
    locked are skipped (the next sweep takes them); a row the batch locked is checked
    against its ``WHERE`` as it is then (READ COMMITTED's recheck) and cannot change until
    the delete commits, so a job no longer done is never deleted.

    The batch is a ``MATERIALIZED`` CTE, chosen once, and its rows are deleted by primary
    key. As ``id IN (SELECT ... LIMIT n FOR UPDATE SKIP LOCKED)`` the planner could run the
    subquery again for each row it deleted, each run skipping the rows the statement had
    just deleted and taking the next: one statement deleted every done job due, whatever
    ``limit`` said (3 of 3 at ``limit`` 1, 1,500 of 1,500 at 1,000; session 33), in one
    transaction that held the claims back. Joined on ``run_after`` and ``status`` as well,
    the planner (estimating 2 rows on a table not yet analysed) scanned ``jobs_done`` once
    per batch row: 250-470 ms for a batch of 1,000 where the key takes 8-10 ms."""
    if limit <= 0:
        return 0
    cur = await conn.execute(
        "WITH batch AS MATERIALIZED (SELECT id FROM jobs WHERE status = 'done' "
        "AND run_after < %s ORDER BY run_after LIMIT %s FOR UPDATE SKIP LOCKED) "
        "DELETE FROM jobs USING batch WHERE jobs.id = batch.id",
        (encode_time(before), limit),
    )
    return cur.rowcount


async def list_jobs(
    conn: psycopg.AsyncConnection[Any], tenant: str, user: str, status: str | None
) -> list[Job]:
    sql = f'SELECT {JOB_COLUMNS} FROM jobs WHERE tenant = %s AND "user" = %s'
    args: list[Any] = [tenant, user]
    if status is not None:
        sql += " AND status = %s"
        args.append(job_status(status).value)
    rows = await (await conn.execute(sql + " ORDER BY created_at, id", args)).fetchall()
    return [job_from_row(r) for r in rows]
