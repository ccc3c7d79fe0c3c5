"""The sweep of done jobs reads the jobs it deletes (jobs32): SQLite's plan searches
``jobs_ready (status, run_after)`` (no new schema object: page 1 has no room), and
PostgreSQL's the partial index ``jobs_done`` that step 30 makes on an older store; the
rows SQLite reads are the same at 100 and 10,000 done jobs still kept."""

from __future__ import annotations

import sqlite3
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memstrata.jobs import Job, JobStatus
from memstrata.store import open_store
from memstrata.store.postgres.schema import SCHEMA_VERSION
from memstrata.store.sqlite.codec import encode_time

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from store.reterm_files import _pg, pg_as_schema, pg_version  # noqa: E402

NOW = datetime(2026, 6, 1, tzinfo=UTC)
SWEEP = "SELECT id FROM jobs WHERE status = 'done' AND run_after < {} ORDER BY run_after LIMIT 1000"


def _done(i: int, at: datetime) -> Job:
    return Job(
        id=f"d{i:05d}",
        kind="k",
        tenant="t",
        user=f"u{i % 10}",
        payload={},
        created_at=at,
        run_after=at,
        status=JobStatus.DONE,
    )


def _steps(tmp_path: Path, kept: int) -> int:
    """SQLite VM steps of a sweep deleting 10 old done jobs beside ``kept`` young ones."""
    path = tmp_path / f"s{kept}.db"
    store = open_store(f"sqlite:///{path}")
    try:
        store.enqueue([_done(i, NOW + timedelta(seconds=i)) for i in range(kept)])
        store.enqueue([_done(100_000 + i, NOW - timedelta(days=9)) for i in range(10)])
    finally:
        store.close()
    conn = sqlite3.connect(path)
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    conn.set_progress_handler(count, 1)
    cur = conn.execute(
        "DELETE FROM jobs WHERE id IN (" + SWEEP.format("?") + ")", (encode_time(NOW),)
    )
    conn.set_progress_handler(None, 1)
    assert cur.rowcount == 10
    plan = [r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + SWEEP.format("?"), ("x",))]
    conn.close()
    assert any("jobs_ready (status=? AND run_after<?)" in p for p in plan), plan
    return steps[0]


def test_sqlite_sweep_reads_what_it_deletes(tmp_path: Path) -> None:
    assert _steps(tmp_path, 100) == _steps(tmp_path, 10_000)


def test_postgresql_step_30_makes_the_index_the_sweep_reads(pg_url: str) -> None:
    store: Any = open_store(pg_url)
    try:
        store.enqueue([_done(i, NOW + timedelta(seconds=i)) for i in range(2_000)])
    finally:
        store.close()
    with _pg(pg_url) as conn:  # the schema as step 29 left it
        conn.execute("DROP INDEX jobs_done")
    pg_as_schema(pg_url, 29)
    store = open_store(pg_url)
    try:
        assert pg_version(pg_url) == SCHEMA_VERSION >= 30
        with _pg(pg_url) as conn:
            conn.execute("ANALYZE jobs")
            plan = "\n".join(
                str(r[0])
                for r in conn.execute(
                    ("EXPLAIN " + SWEEP.format("%s")).encode(), (encode_time(NOW),)
                )
            )
        assert "jobs_done" in plan, plan
        assert store.sweep_done_jobs(NOW + timedelta(seconds=10), 1000) == 10
    finally:
        store.close()
