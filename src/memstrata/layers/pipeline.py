"""The background ingest pipeline: jobs from the outbox, dispatched to every layer's step.

Two job kinds: ``"ingest"`` (payload ``{"ids": [...]}``: the message ids of one
``add_messages`` call) and ``"session_end"``. Each handler runs *every* step, collects the
failures and raises one error at the end, so the job is retried; steps are idempotent, so
the ones that had succeeded write nothing the second time.

This module also holds this layer group's own steps:

- :class:`MidTermStep`: turns that left the short-term window → mid-term clusters and the
  session's rolling summary; at session end, every turn of the session → mid-term;
- :class:`SummaryStep`: a long-term summary per complete block of 10 rounds; at session end,
  one for the rounds left.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from ..errors import MemstrataError, ValidationError
from ..jobs import Job, LeaseLostError, check_lease
from ..records import MemoryRecord, RecordType, Role, new_id
from ..scope import Scope
from .base import IngestStep, LayerContext
from .mid_term import MidTermService
from .short_term import ShortTermService
from .summaries import SummaryService

__all__ = [
    "INGEST",
    "SESSION_END",
    "MidTermStep",
    "Pipeline",
    "PipelineError",
    "SummaryStep",
    "default_steps",
    "make_ingest_job",
    "make_session_end_job",
]

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


class Pipeline:
    def __init__(self, ctx: LayerContext, steps: Sequence[IngestStep]) -> None:
        names = [s.name for s in steps]
        if len(set(names)) != len(names):
            raise ValidationError(f"ingest step names must be unique, got {names}")
        self._ctx = ctx
        self.steps = list(steps)

    def handlers(self) -> dict[str, Callable[[Job], None]]:
        return {INGEST: self.run_ingest, SESSION_END: self.run_session_end}

    def run_ingest(self, job: Job) -> None:
        scope = _scope(job)
        ids = job.payload.get("ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ValidationError(f"ingest job {job.id} has no list of message ids")
        messages = [
            m
            for m in self._ctx.store.get_many(scope, ids)
            if m.is_active and m.type is RecordType.MESSAGE
        ]
        if not messages:
            return  # deleted or purged since: nothing to do
        self._run(job, lambda step: step.on_messages(scope, messages))

    def run_session_end(self, job: Job) -> None:
        scope = _scope(job)
        self._run(job, lambda step: step.on_session_end(scope))

    def _run(self, job: Job, call: Callable[[IngestStep], None]) -> None:
        failures: list[str] = []
        causes: list[Exception] = []
        for step in self.steps:
            check_lease()  # a worker that lost the job's lease stops here
            try:
                call(step)
            except LeaseLostError:
                raise
            except Exception as exc:  # keep going: other layers must not wait on one failure
                failures.append(f"{step.name}: {type(exc).__name__}: {exc}")
                causes.append(exc)
        if failures:
            raise PipelineError(f"{job.kind} job {job.id}: " + "; ".join(failures), causes)


class MidTermStep:
    """Short-term overflow → mid-term clusters + rolling summary."""

    name = "mid_term"

    def __init__(
        self,
        ctx: LayerContext,
        short_term: ShortTermService | None = None,
        mid_term: MidTermService | None = None,
        summaries: SummaryService | None = None,
    ) -> None:
        self.short_term = short_term or ShortTermService(ctx)
        self.mid_term = mid_term or MidTermService(ctx)
        self.summaries = summaries or SummaryService(ctx, self.short_term)

    def on_messages(self, scope: Scope, messages: Sequence[MemoryRecord]) -> None:
        # Only the turns that left the window because of *these* messages (one window is
        # read, not the session), so the cost per job does not grow with the session.
        if scope.session is None:
            return  # no session, no buffer: nothing can leave it
        left = self.short_term.left_by(scope, [m.id for m in messages])
        if left:
            self.mid_term.absorb(scope, left)
            self.summaries.update_rolling(scope, left)

    def on_session_end(self, scope: Scope) -> None:
        # The turns still in the window; those that left it were absorbed by their jobs.
        if scope.session is None:
            return
        self.mid_term.absorb(scope, self.short_term.window(scope))


class SummaryStep:
    """Long-term summaries every ``summary_every_rounds`` rounds and at session end."""

    name = "summaries"

    def __init__(self, ctx: LayerContext, summaries: SummaryService | None = None) -> None:
        self.summaries = summaries or SummaryService(ctx)

    def on_messages(self, scope: Scope, messages: Sequence[MemoryRecord]) -> None:
        # A block of rounds completes only when a user turn opens the next round.
        if scope.session is not None and any(m.role is Role.USER for m in messages):
            self.summaries.summarize_due(scope)

    def on_session_end(self, scope: Scope) -> None:
        if scope.session is not None:
            self.summaries.summarize_session_end(scope)


def default_steps(ctx: LayerContext) -> list[IngestStep]:
    """This layer group's steps sharing one short-term service (the lead adds the others)."""
    short = ShortTermService(ctx)
    summaries = SummaryService(ctx, short)
    return [MidTermStep(ctx, short, MidTermService(ctx), summaries), SummaryStep(ctx, summaries)]
