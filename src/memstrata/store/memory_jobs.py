"""memory://'s job queue, indexed so each call walks what it answers (memjobs31).

Every job stays until its user is purged, finished and failed ones included, as in the
SQLite and PostgreSQL stores' ``jobs`` tables (``list_jobs(status="done")`` reads them).
What the calls walk instead of every job the store ever held:

- a claim: the pending jobs in the order a claim takes them, ``(run_after, created_at,
  id)``, each user's first one in one list (a user whose job runs is skipped once, not job
  by job) and each user's in another, plus the running jobs (the claims in flight);
- ``enqueue``'s duplicate check: the open jobs by ``(tenant, user, dedup_key)``;
- ``count_open_jobs``, ``list_jobs``, ``stats``, ``purge_user``: each user's jobs by status.

Every change of a job goes through :meth:`JobIndex.put` or :meth:`JobIndex.drop`, which
take the job out of the lists its old state was in and file the new one.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from ..jobs import Job, JobStatus

__all__ = ["JobIndex", "QueueKey", "queue_key"]

QueueKey = tuple[datetime, datetime, str]
_OPEN = (JobStatus.PENDING, JobStatus.RUNNING)


def queue_key(job: Job) -> QueueKey:
    """The order a claim takes due jobs in (the SQL stores' ``ORDER BY``)."""
    return (job.run_after, job.created_at, job.id)


class JobIndex:
    """A store's jobs by id, and the indexes above (the store's lock held by callers)."""

    def __init__(self) -> None:
        self.by_id: dict[str, Job] = {}
        # (tenant, user) -> status -> id -> job
        self.of_user: dict[tuple[str, str], dict[JobStatus, dict[str, Job]]] = {}
        self.open: dict[str, Job] = {}
        self.running: dict[str, Job] = {}
        # pending jobs: each user's in claim order, and each user's first as
        # (key, tenant, user) in claim order
        self.queue_of: dict[tuple[str, str], list[QueueKey]] = {}
        self.heads: list[tuple[QueueKey, str, str]] = []
        self.pending: list[QueueKey] = []  # every pending job (a claim by session alone)
        self.dedup: dict[tuple[str, str, str], dict[str, None]] = {}
        self.walked = 0  # jobs looked at by the calls below (tests/memjobs31)

    def __contains__(self, job_id: object) -> bool:
        return job_id in self.by_id

    def __len__(self) -> int:
        return len(self.by_id)

    def get(self, job_id: str) -> Job | None:
        return self.by_id.get(job_id)

    def values(self) -> Iterator[Job]:
        return iter(self.by_id.values())

    def users(self) -> set[tuple[str, str]]:
        return set(self.of_user)

    # --- changes -----------------------------------------------------------------------------
    def put(self, job: Job) -> None:
        """``job`` stored (a new one, or the new state of one stored)."""
        old = self.by_id.get(job.id)
        if old is not None:
            self._unfile(old)
        self.by_id[job.id] = job
        self._file(job)

    def drop(self, job_id: str) -> Job | None:
        job = self.by_id.pop(job_id, None)
        if job is not None:
            self._unfile(job)
        return job

    def _file(self, job: Job) -> None:
        owner = (job.tenant, job.user)
        self.of_user.setdefault(owner, {}).setdefault(job.status, {})[job.id] = job
        if job.status in _OPEN:
            self.open[job.id] = job
            if job.dedup_key is not None:
                self.dedup.setdefault((*owner, job.dedup_key), {})[job.id] = None
        if job.status is JobStatus.RUNNING:
            self.running[job.id] = job
        elif job.status is JobStatus.PENDING:
            key = queue_key(job)
            insort(self.pending, key)
            queue = self.queue_of.setdefault(owner, [])
            if queue and key > queue[0]:
                insort(queue, key)
                return
            if queue:
                self._remove(self.heads, (queue[0], *owner))
            queue.insert(0, key)
            insort(self.heads, (key, *owner))

    def _unfile(self, job: Job) -> None:
        owner = (job.tenant, job.user)
        statuses = self.of_user[owner]
        held = statuses[job.status]
        del held[job.id]
        if not held:
            del statuses[job.status]
        if not statuses:
            del self.of_user[owner]
        if job.status in _OPEN:
            del self.open[job.id]
            if job.dedup_key is not None:
                same = self.dedup[(*owner, job.dedup_key)]
                del same[job.id]
                if not same:
                    del self.dedup[(*owner, job.dedup_key)]
        if job.status is JobStatus.RUNNING:
            del self.running[job.id]
        elif job.status is JobStatus.PENDING:
            key = queue_key(job)
            self._remove(self.pending, key)
            queue = self.queue_of[owner]
            if queue[0] != key:
                self._remove(queue, key)
                return
            self._remove(self.heads, (key, *owner))
            del queue[0]
            if queue:
                insort(self.heads, (queue[0], *owner))
            else:
                del self.queue_of[owner]

    @staticmethod
    def _remove(items: list[Any], item: object) -> None:
        i = bisect_left(items, item)
        if i == len(items) or items[i] != item:
            raise AssertionError(f"memory:// job index lost {item!r}")  # a defect here
        del items[i]

    # --- reads -------------------------------------------------------------------------------
    def has_open(self, tenant: str, user: str, dedup_key: str) -> bool:
        return bool(self.dedup.get((tenant, user, dedup_key)))

    def of(self, tenant: str, user: str, *statuses: JobStatus) -> list[Job]:
        """The user's jobs of ``statuses`` (every status if none is given)."""
        mine = self.of_user.get((tenant, user), {})
        jobs = [j for s in (statuses or tuple(mine)) for j in mine.get(s, {}).values()]
        self.walked += len(jobs)
        return jobs

    def count(self, tenant: str, user: str, status: JobStatus) -> int:
        return len(self.of_user.get((tenant, user), {}).get(status, {}))

    def open_jobs(self, tenant: str | None, user: str | None) -> list[Job]:
        """Open jobs, the user's alone when both are given."""
        if tenant is not None and user is not None:
            return self.of(tenant, user, *_OPEN)
        self.walked += len(self.open)
        return list(self.open.values())

    def claimable(
        self,
        now: datetime,
        due: datetime,
        limit: int,
        tenant: str | None,
        user: str | None,
        session: str | None,
    ) -> list[Job]:
        """What a claim takes: due jobs (pending and due by ``due``, or running under a
        lease expired by ``now``) of the one user whose such job comes first, of no user
        with a job under a live lease, matching the filters; in claim order, ``limit`` at
        most."""

        def wanted(j: Job) -> bool:
            return all(
                want is None or got == want
                for want, got in ((tenant, j.tenant), (user, j.user), (session, j.session))
            )

        running = list(self.running.values())
        self.walked += len(running)
        busy = {
            (j.tenant, j.user) for j in running if j.lease_until is not None and j.lease_until > now
        }
        expired = sorted(
            (
                j
                for j in running
                if j.lease_until is not None
                and j.lease_until <= now
                and (j.tenant, j.user) not in busy
                and wanted(j)
            ),
            key=queue_key,
        )
        first = self._first_pending(due, busy, tenant, user, session, wanted)
        if first is None and not expired:
            return []
        lead = min(
            (j for j in (first, expired[0] if expired else None) if j is not None),
            key=queue_key,
        )
        owner = (lead.tenant, lead.user)
        mine = [j for j in expired if (j.tenant, j.user) == owner][:limit]
        queue = self.queue_of.get(owner, [])
        taken: list[Job] = []
        for key in queue:
            if len(taken) == limit or key[0] > due:
                break
            job = self.by_id[key[2]]
            self.walked += 1
            if wanted(job):
                taken.append(job)
        return sorted([*mine, *taken], key=queue_key)[:limit]

    def _first_pending(
        self,
        due: datetime,
        busy: set[tuple[str, str]],
        tenant: str | None,
        user: str | None,
        session: str | None,
        wanted: Callable[[Job], bool],
    ) -> Job | None:
        if tenant is not None and user is not None:
            if (tenant, user) in busy:
                return None
            for key in self.queue_of.get((tenant, user), []):
                if key[0] > due:
                    return None
                job = self.by_id[key[2]]
                self.walked += 1
                if wanted(job):
                    return job
            return None
        if session is None:  # users in the order of their first pending job
            for key, t, u in self.heads:
                if key[0] > due:
                    return None
                self.walked += 1
                if (t, u) not in busy and (tenant is None or t == tenant):
                    job = self.by_id[key[2]]
                    if wanted(job):
                        return job
            return None
        for key in self.pending:
            if key[0] > due:
                return None
            job = self.by_id[key[2]]
            self.walked += 1
            if (job.tenant, job.user) not in busy and wanted(job):
                return job
        return None
