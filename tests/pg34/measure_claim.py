"""The claim's statement before and after pg34 (EXPLAIN ANALYZE, rolled back), at 100,000
open jobs: docs/measurements.md, session 34, pg34. Not a test: run it by hand.

    PYTHONPATH=src python tests/pg34/measure_claim.py ADMIN_URL

A schema of its own (made by memstrata, dropped at the end), 100,000 pending jobs in two
shapes: one user's 100,000, and 100 users' 1,000 each; each statement timed before and after
``ANALYZE jobs`` (the planner's plan changes with the statistics), median of 5 runs."""

from __future__ import annotations

import statistics
import sys
import uuid

import psycopg

from memstrata import Memory

WHERE = (
    "((j.status = 'pending' AND j.run_after <= %s) OR (j.status = 'running' AND "
    "j.lease_until <= %s)) AND j.tenant = 't' AND j.\"user\" = %s"
)
ORDER = "ORDER BY j.run_after, j.created_at, j.id LIMIT %s FOR UPDATE SKIP LOCKED"
SET = "status = 'running', lease_until = 'z', lease_token = 'x', attempts = attempts + 1"
BEFORE = (
    f"UPDATE jobs SET {SET} WHERE id IN (SELECT j.id FROM jobs j WHERE {WHERE} {ORDER}) "
    "RETURNING id"
)
AFTER = (
    f"WITH batch AS MATERIALIZED (SELECT j.id AS picked FROM jobs j WHERE {WHERE} {ORDER}) "
    f"UPDATE jobs SET {SET} FROM batch WHERE jobs.id = batch.picked RETURNING jobs.id"
)


def timed(conn: psycopg.Connection, sql: str, user: str, limit: int) -> tuple[float, int]:
    times, rows = [], 0
    for _ in range(5):
        conn.execute("BEGIN")
        args = ("2099", "2000", user, limit)
        plan = [r[0] for r in conn.execute("EXPLAIN ANALYZE " + sql, args).fetchall()]
        conn.execute("ROLLBACK")
        times.append(float(plan[-1].split(":")[1].split()[0]))
        rows = int(float(plan[0].split("rows=")[-1].split()[0]))
    return statistics.median(times), rows


def main(admin: str) -> None:
    schema = "m_" + uuid.uuid4().hex[:8]
    url = admin + ("&" if "?" in admin else "?") + "schema=" + schema
    Memory(url, embedder="hashing", background=False).close()
    try:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"SET search_path = {schema}, public")
            for shape, users in (("1 user x 100,000", 1), ("100 users x 1,000", 100)):
                conn.execute("TRUNCATE jobs")
                conn.execute(
                    'INSERT INTO jobs (id, kind, tenant, "user", payload, created_at, run_after, '
                    "status, attempts) SELECT 'j' || i, 'k', 't', 'u' || (i %% %s), '{}', "
                    "'2026-11-01T00:00:00.' || lpad(i::text, 6, '0'), "
                    "'2026-11-01T00:00:00.' || lpad(i::text, 6, '0'), 'pending', 0 "
                    "FROM generate_series(1, 100000) i",
                    (users,),
                )
                for stats in ("no statistics", "analyzed"):
                    if stats == "analyzed":
                        conn.execute("ANALYZE jobs")
                    else:
                        conn.execute("SELECT pg_stat_reset_single_table_counters('jobs'::regclass)")
                    for limit in (1, 100):
                        for name, sql in (("before", BEFORE), ("after", AFTER)):
                            ms, rows = timed(conn, sql, "u0", limit)
                            cells = (shape, stats, limit, name, f"{ms:.2f} ms", rows)
                            print("| " + " | ".join(map(str, cells)) + " |", flush=True)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


if __name__ == "__main__":
    main(sys.argv[1])
