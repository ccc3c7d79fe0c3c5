"""memory://'s job queue, indexed so each call walks what it answers (memjobs31).

Every job stays until its user is purged, failed ones included, as in the SQLite and
PostgreSQL stores' ``jobs`` tables (``list_jobs(status="done")`` reads them); ``done`` ones
go earlier, by the retention ``maintain`` sweeps (:meth:`JobIndex.done_before`).
What the calls walk instead of every job the store ever held:

- a claim: the pending jobs in the order a claim takes them, ``(run_after, created_at,
  id)``, each user's first one in one list (a user whose job runs is skipped once, not job
  by job) and each user's in another, plus the running jobs (the claims in flight); those
  two lists are kept for every pending job, for each tenant's and for each session's
  (jobs32), and for each user name's (mem33), so a claim by tenant, by session or by user
  alone walks its own users, not every pending job;
- ``enqueue``'s duplicate check: the open jobs by ``(tenant, user, dedup_key)``;
- ``list_jobs``, ``stats``, ``purge_user``: each user's jobs by status; ``count_open_jobs``
  too, or by tenant or session alone the running jobs and the group's pending ones;
- the retention of finished jobs (``maintain``; jobs32): the ``done`` jobs by
  ``(run_after, id)``, so a sweep walks what it deletes.

Every change of a job goes through :meth:`JobIndex.put` or :meth:`JobIndex.drop`, which
take the job out of the lists its old state was in and file the new one.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..jobs import Job, JobStatus

__all__ = ["JobIndex", "QueueKey", "queue_key"]

QueueKey = tuple[datetime, datetime, str]
Owner = tuple[str, str]
_OPEN = (JobStatus.PENDING, JobStatus.RUNNING)


def queue_key(job: Job) -> QueueKey:
    """The order a claim takes due jobs in (the SQL stores' ``ORDER BY``)."""
    return (job.run_after, job.created_at, job.id)


def _remove(items: list[Any], item: object) -> None:
    i = bisect_left(items, item)
    if i == len(items) or items[i] != item:
        raise AssertionError(f"memory:// job index lost {item!r}")  # a defect here
    del items[i]


@dataclass(slots=True)
class Queues:
    """Pending jobs of a group (all, one tenant's, one session's): each user's in claim
    order (``of``), and each user's first as ``(key, tenant, user)`` in claim order
    (``heads``): a claim takes the first head whose user holds no live lease."""

    of: dict[Owner, list[QueueKey]] = field(default_factory=dict)
    heads: list[tuple[QueueKey, str, str]] = field(default_factory=list)

    def add(self, owner: Owner, key: QueueKey) -> None:
        queue = self.of.setdefault(owner, [])
        if queue and key > queue[0]:
            insort(queue, key)
            return
        if queue:
            _remove(self.heads, (queue[0], *owner))
        queue.insert(0, key)
        insort(self.heads, (key, *owner))

    def remove(self, owner: Owner, key: QueueKey) -> None:
        queue = self.of[owner]
        if queue[0] != key:
            _remove(queue, key)
            return
        _remove(self.heads, (key, *owner))
        del queue[0]
        if queue:
            insort(self.heads, (queue[0], *owner))
        else:
            del self.of[owner]


class JobIndex:
    """A store's jobs by id, and the indexes above (the store's lock held by callers)."""

    def __init__(self) -> None:
        self.by_id: dict[str, Job] = {}
        # (tenant, user) -> status -> id -> job
        self.of_user: dict[tuple[str, str], dict[JobStatus, dict[str, Job]]] = {}
        self.open: dict[str, Job] = {}
        self.running: dict[str, Job] = {}
        # pending jobs: every one, each tenant's, each session's (a claim by tenant or by
        # session alone walks its own group's users, not every pending job: jobs32)
        self.queues = Queues()
        self.of_tenant: dict[str, Queues] = {}
        self.of_session: dict[str, Queues] = {}
        # and each user name's, of any tenant (a claim or count by user alone, mem33)
        self.of_name: dict[str, Queues] = {}
        self.done: list[tuple[datetime, str]] = []  # (run_after, id) of done jobs (retention)
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

    @property
    def queue_of(self) -> dict[Owner, list[QueueKey]]:
        return self.queues.of

    @property
    def heads(self) -> list[tuple[QueueKey, str, str]]:
        return self.queues.heads

    def _groups(self, job: Job) -> Iterator[Queues]:
        """The groups a pending job is queued in (made when missing)."""
        yield self.queues
        yield self.of_tenant.setdefault(job.tenant, Queues())
        yield self.of_name.setdefault(job.user, Queues())
        if job.session is not None:
            yield self.of_session.setdefault(job.session, Queues())

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
            for group in self._groups(job):
                group.add(owner, key)
        elif job.status is JobStatus.DONE:
            insort(self.done, (job.run_after, job.id))

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
            self.queues.remove(owner, key)
            for name, groups in (
                (job.tenant, self.of_tenant),
                (job.user, self.of_name),
                (job.session, self.of_session),
            ):
                if name is None:
                    continue
                group = groups[name]
                group.remove(owner, key)
                if not group.of:
                    del groups[name]
        elif job.status is JobStatus.DONE:
            _remove(self.done, (job.run_after, job.id))

    # --- reads -------------------------------------------------------------------------------
    def has_open(self, tenant: str, user: str, dedup_key: str) -> bool:
        return bool(self.dedup.get((tenant, user, dedup_key)))

    def of(self, tenant: str, user: str, *statuses: JobStatus) -> list[Job]:
        """The user's jobs of ``statuses`` (every status if none is given)."""
        mine = self.of_user.get((tenant, user), {})
        jobs = [j for s in (statuses or tuple(mine)) for j in mine.get(s, {}).values()]
        self.walked += len(jobs)
        return jobs

    def done_before(self, before: datetime, limit: int) -> list[str]:
        """Ids of up to ``limit`` done jobs due before ``before``, the oldest first."""
        out: list[str] = []
        for run_after, job_id in self.done:
            if len(out) >= limit or run_after >= before:
                break
            out.append(job_id)
        self.walked += len(out)
        return out

    def count(self, tenant: str, user: str, status: JobStatus) -> int:
        return len(self.of_user.get((tenant, user), {}).get(status, {}))

    def count_open(self, tenant: str | None, user: str | None, session: str | None) -> int:
        """Open jobs matching the filters: the user's walked when both ``tenant`` and
        ``user`` are given; else the running ones (the claims in flight) and the pending
        ones of the filters' group, counted user by user (jobs32: a flush of a session
        counted every open job of the store before)."""

        def wanted(j: Job) -> bool:
            return all(
                want is None or got == want
                for want, got in ((tenant, j.tenant), (user, j.user), (session, j.session))
            )

        if tenant is not None and user is not None:
            return sum(wanted(j) for j in self.of(tenant, user, *_OPEN))
        self.walked += len(self.running)
        count = sum(wanted(j) for j in self.running.values())
        group = self._group(tenant, session, user)
        for (t, u), queue in group.of.items() if group is not None else ():
            self.walked += 1
            if tenant in (None, t) and user in (None, u):
                count += len(queue)
        return count

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
        # every pending job of the group matches the tenant and session asked (a session's
        # group may hold another tenant's users of that session name: checked on heads)
        group = self._group(tenant, session, user)
        first = self._first_pending(group, due, busy, tenant, user)
        if first is None and not expired:
            return []
        lead = min(
            (j for j in (first, expired[0] if expired else None) if j is not None),
            key=queue_key,
        )
        owner = (lead.tenant, lead.user)
        mine = [j for j in expired if (j.tenant, j.user) == owner][:limit]
        taken: list[Job] = []
        for key in group.of.get(owner, []) if group is not None else []:
            if len(taken) == limit or key[0] > due:
                break
            self.walked += 1
            taken.append(self.by_id[key[2]])
        return sorted([*mine, *taken], key=queue_key)[:limit]

    def _group(self, tenant: str | None, session: str | None, user: str | None) -> Queues | None:
        """The smallest group holding every pending job a claim with these filters may take
        (``None``: no pending job has them): a session's, a tenant's (its users' queues are
        whole: a claim of one user takes from its queue), or a user name's when neither is
        given (mem33: a claim by user alone walked every user's first pending job)."""
        if session is not None:
            return self.of_session.get(session)
        if tenant is not None:
            return self.of_tenant.get(tenant)
        if user is not None:
            return self.of_name.get(user)
        return self.queues

    def _first_pending(
        self,
        group: Queues | None,
        due: datetime,
        busy: set[Owner],
        tenant: str | None,
        user: str | None,
    ) -> Job | None:
        if group is None:
            return None
        if tenant is not None and user is not None:
            queue = group.of.get((tenant, user))
            if (tenant, user) in busy or not queue or queue[0][0] > due:
                return None
            self.walked += 1
            return self.by_id[queue[0][2]]
        # users in the order of their first pending job: those passed over are the busy
        # ones (a claim in flight each), and in a session's group other tenants' users
        # (a session name two tenants both use), or other users' of a session's group for a
        # claim by user and session (by user alone: the user name's group, mem33)
        for key, t, u in group.heads:
            if key[0] > due:
                return None
            self.walked += 1
            if (t, u) not in busy and tenant in (None, t) and user in (None, u):
                return self.by_id[key[2]]
        return None
