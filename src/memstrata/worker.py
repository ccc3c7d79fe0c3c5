"""Runs background jobs from the store's outbox: claim, dispatch by kind, retry with backoff.

A job is claimed with a lease; if the process dies mid-job the lease expires and the job is
claimed again, so a crash loses nothing (the inputs — raw messages — are already stored).
Handlers must therefore be idempotent.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta

from .clock import Clock
from .jobs import Job, retry_delay
from .store.base import Store

__all__ = ["BackgroundWorker", "JobRunner", "RunReport"]

log = logging.getLogger("memstrata.worker")

Handler = Callable[[Job], None]


@dataclass(slots=True)
class RunReport:
    done: int = 0
    retried: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)


class JobRunner:
    def __init__(self, store: Store, handlers: Mapping[str, Handler], clock: Clock, *,
                 max_attempts: int = 5, lease_seconds: float = 300.0) -> None:
        self._store = store
        self._handlers = dict(handlers)
        self._clock = clock
        self.max_attempts = max_attempts
        self.lease_seconds = lease_seconds

    def run_pending(self, *, tenant: str | None = None, user: str | None = None,
                    session: str | None = None, batch: int = 50,
                    include_delayed: bool = False) -> RunReport:
        """Run claimable jobs until none is left (``include_delayed`` also runs jobs whose
        retry time has not come yet, as ``flush()`` must)."""
        report = RunReport()
        while True:
            now = self._clock.now()
            horizon = now + timedelta(days=3650) if include_delayed else None
            jobs = self._store.claim_jobs(now, limit=batch, lease_seconds=self.lease_seconds,
                                          tenant=tenant, user=user, session=session,
                                          due_before=horizon)
            if not jobs:
                return report
            for job in jobs:
                self._run_one(job, report)

    def _run_one(self, job: Job, report: RunReport) -> None:
        handler = self._handlers.get(job.kind)
        if handler is None:
            self._store.fail_job(job.id, f"no handler for job kind {job.kind!r}", None)
            report.failed += 1
            return
        try:
            handler(job)
        except Exception as exc:  # a handler may fail in any way; the job keeps it for retry
            attempts = job.attempts  # counted by the claim
            message = f"{type(exc).__name__}: {exc}"
            report.errors.append(f"{job.kind} {job.id}: {message}")
            if attempts >= self.max_attempts:
                log.error("job %s (%s) failed for good: %s", job.id, job.kind, message)
                self._store.fail_job(job.id, message, None)
                report.failed += 1
            else:
                log.warning("job %s (%s) failed, will retry: %s", job.id, job.kind, message)
                self._store.fail_job(job.id, message, self._clock.now() + retry_delay(attempts))
                report.retried += 1
            return
        self._store.finish_job(job.id)
        report.done += 1

    def run_forever(self, *, poll_seconds: float = 1.0, stop: Callable[[], bool] = lambda: False
                    ) -> None:
        """The ``memstrata worker`` loop. A store that can announce new jobs (PostgreSQL's
        ``LISTEN``/``NOTIFY``: ``wait_for_jobs``) wakes it at once instead of at the next poll."""
        wait = getattr(self._store, "wait_for_jobs", None)
        while not stop():
            report = self.run_pending()
            if not (report.done or report.retried or report.failed):
                if wait is not None:
                    wait(poll_seconds)
                else:
                    time.sleep(poll_seconds)


class BackgroundWorker:
    """An in-process daemon thread that runs jobs as they are queued.

    Woken by every write and polling otherwise (jobs queued by other processes, retries
    coming due). ``stop()`` lets the current job finish; anything still queued stays in the
    store for the next flush, worker or process.
    """

    def __init__(self, runner: JobRunner, *, poll_seconds: float = 2.0) -> None:
        self._runner = runner
        self._poll = poll_seconds
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="memstrata-worker", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 30.0) -> None:
        self._stopping.set()
        self._wake.set()
        self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(self._poll)
            self._wake.clear()
            if self._stopping.is_set():
                return
            try:
                self._runner.run_pending()
            except Exception:  # the store may be busy or gone; the next wake retries
                log.exception("background job run failed; will retry")
