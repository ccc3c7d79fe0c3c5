"""Finished and failed jobs in memory:// as in SQLite (memjobs31): kept, listed by status
and in ``list_jobs``'s order, out of the open counts and claims, until the user's purge
deletes every job of the user (the SQL stores delete no finished job before: a ``done``
job is what ``list_jobs(status="done")`` reads). The same steps on both stores give the
same answers, 300 finished jobs of three users, each claim walking the open ones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memstrata.jobs import Job
from memstrata.scope import Scope
from memstrata.store import open_store

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _steps(url: str) -> list[Any]:
    store = open_store(url)
    try:
        out: list[Any] = []
        for i in range(300):
            user = f"u{i % 3}"
            at = T0 + timedelta(seconds=i)
            store.enqueue(
                [
                    Job(
                        id=f"j{i:03d}",
                        kind="k",
                        tenant="t",
                        user=user,
                        payload={},
                        created_at=at,
                        run_after=at,
                    )
                ]
            )
            (j,) = store.claim_jobs(at, limit=5, lease_seconds=30)
            if i % 4:
                store.finish_job(j.id, j.lease_token)
            else:
                store.fail_job(j.id, "boom", None, j.lease_token)
        for user in ("u0", "u1", "u2"):
            for status in (None, "done", "failed", "pending", "running"):
                out.append(
                    [
                        (j.id, j.status, j.attempts)
                        for j in store.list_jobs("t", user, status=status)
                    ]
                )
            stats = store.stats(Scope("t", user))
            out.append((stats.pending_jobs, stats.failed_jobs))
        out.append(store.count_open_jobs())
        report = store.purge_user("t", "u1")
        out.append((report.jobs, report.remaining))
        out.append([len(store.list_jobs("t", u)) for u in ("u0", "u1", "u2")])
        return out
    finally:
        store.close()


def test_finished_jobs_kept_until_the_users_purge_as_in_sqlite(tmp_path: Path) -> None:
    memory = _steps("memory://")
    assert memory == _steps(f"sqlite:///{tmp_path / 'm.db'}")
    assert memory[-1] == [100, 0, 100]
    assert memory[-2] == (100, 0)
