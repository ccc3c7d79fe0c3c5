"""The ingest pipeline's job kinds, jobs and error (pure); re-exported by
:mod:`memstrata.layers.pipeline`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memstrata.errors import MemstrataError, ValidationError
from memstrata.jobs import Job
from memstrata.records import new_id
from memstrata.scope import Scope

__all__ = ["INGEST", "SESSION_END", "PipelineError", "make_ingest_job", "make_session_end_job"]

INGEST = "ingest"
SESSION_END = "session_end"


class PipelineError(MemstrataError):
    """One or more ingest steps failed; the job is retried (steps are idempotent).

    ``causes`` holds the steps' exceptions (the worker logs a retry caused only by
    concurrent changes at DEBUG, any other at WARNING)."""

    def __init__(self, message: str, causes: Sequence[BaseException] = ()) -> None:
        super().__init__(message)
        self.causes = list(causes)


def _scope(job: Job) -> Scope:
    return Scope(job.tenant, job.user, job.agent, job.session)


def make_ingest_job(scope: Scope, ids: Sequence[str], now: datetime) -> Job:
    if not ids:
        raise ValidationError("an ingest job needs at least one message id")
    return Job(
        id=new_id(),
        kind=INGEST,
        tenant=scope.tenant,
        user=scope.user,
        payload={"ids": [str(i) for i in ids]},
        created_at=now,
        run_after=now,
        agent=scope.agent,
        session=scope.session,
    )


def make_session_end_job(scope: Scope, now: datetime) -> Job:
    if scope.session is None:
        raise ValidationError("end_session needs a scope with session=")
    # One open session-end job per session is enough: the outbox drops a second one.
    key = f"{SESSION_END}:{scope.agent or ''}:{scope.session}"
    return Job(
        id=new_id(),
        kind=SESSION_END,
        tenant=scope.tenant,
        user=scope.user,
        payload={},
        created_at=now,
        run_after=now,
        agent=scope.agent,
        session=scope.session,
        dedup_key=key,
    )
