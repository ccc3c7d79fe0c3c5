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

from collections.abc import Awaitable, Callable, Sequence

from memstrata._async.layers.base import AsyncIngestStep, AsyncLayerContext
from memstrata._async.layers.mid_term import AsyncMidTermService
from memstrata._async.layers.short_term import AsyncShortTermService
from memstrata._async.layers.summaries import AsyncSummaryService
from memstrata.errors import ValidationError
from memstrata.jobs import Job, LeaseLostError, check_lease
from memstrata.layers.pipeline_types import (
    INGEST,
    SESSION_END,
    PipelineError,
    _scope,
    make_ingest_job,
    make_session_end_job,
)
from memstrata.records import MemoryRecord, RecordType, Role
from memstrata.scope import Scope

__all__ = [
    "INGEST",
    "SESSION_END",
    "AsyncMidTermStep",
    "AsyncPipeline",
    "AsyncSummaryStep",
    "PipelineError",
    "default_steps",
    "make_ingest_job",
    "make_session_end_job",
]


class AsyncPipeline:
    def __init__(self, ctx: AsyncLayerContext, steps: Sequence[AsyncIngestStep]) -> None:
        names = [s.name for s in steps]
        if len(set(names)) != len(names):
            raise ValidationError(f"ingest step names must be unique, got {names}")
        self._ctx = ctx
        self.steps = list(steps)

    def handlers(self) -> dict[str, Callable[[Job], Awaitable[None]]]:
        return {INGEST: self.run_ingest, SESSION_END: self.run_session_end}

    async def run_ingest(self, job: Job) -> None:
        scope = _scope(job)
        ids = job.payload.get("ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ValidationError(f"ingest job {job.id} has no list of message ids")
        messages = [
            m
            for m in await self._ctx.store.get_many(scope, ids)
            if m.is_active and m.type is RecordType.MESSAGE
        ]
        if not messages:
            return  # deleted or purged since: nothing to do
        await self._run(job, lambda step: step.on_messages(scope, messages))

    async def run_session_end(self, job: Job) -> None:
        scope = _scope(job)
        await self._run(job, lambda step: step.on_session_end(scope))

    async def _run(self, job: Job, call: Callable[[AsyncIngestStep], Awaitable[None]]) -> None:
        failures: list[str] = []
        causes: list[Exception] = []
        for step in self.steps:
            check_lease()  # a worker that lost the job's lease stops here
            try:
                await call(step)
            except LeaseLostError:
                raise
            except Exception as exc:  # keep going: other layers must not wait on one failure
                failures.append(f"{step.name}: {type(exc).__name__}: {exc}")
                causes.append(exc)
        if failures:
            raise PipelineError(f"{job.kind} job {job.id}: " + "; ".join(failures), causes)


class AsyncMidTermStep:
    """Short-term overflow → mid-term clusters + rolling summary."""

    name = "mid_term"

    def __init__(
        self,
        ctx: AsyncLayerContext,
        short_term: AsyncShortTermService | None = None,
        mid_term: AsyncMidTermService | None = None,
        summaries: AsyncSummaryService | None = None,
    ) -> None:
        self.short_term = short_term or AsyncShortTermService(ctx)
        self.mid_term = mid_term or AsyncMidTermService(ctx)
        self.summaries = summaries or AsyncSummaryService(ctx, self.short_term)

    async def on_messages(self, scope: Scope, messages: Sequence[MemoryRecord]) -> None:
        # Only the turns that left the window because of *these* messages (one window is
        # read, not the session), so the cost per job does not grow with the session.
        if scope.session is None:
            return  # no session, no buffer: nothing can leave it
        left = await self.short_term.left_by(scope, [m.id for m in messages])
        if left:
            await self.mid_term.absorb(scope, left)
            await self.summaries.update_rolling(scope, left)

    async def on_session_end(self, scope: Scope) -> None:
        # The turns still in the window; those that left it were absorbed by their jobs.
        if scope.session is None:
            return
        await self.mid_term.absorb(scope, await self.short_term.window(scope))


class AsyncSummaryStep:
    """Long-term summaries every ``summary_every_rounds`` rounds and at session end."""

    name = "summaries"

    def __init__(
        self, ctx: AsyncLayerContext, summaries: AsyncSummaryService | None = None
    ) -> None:
        self.summaries = summaries or AsyncSummaryService(ctx)

    async def on_messages(self, scope: Scope, messages: Sequence[MemoryRecord]) -> None:
        # A block of rounds completes only when a user turn opens the next round.
        if scope.session is not None and any(m.role is Role.USER for m in messages):
            await self.summaries.summarize_due(scope)

    async def on_session_end(self, scope: Scope) -> None:
        if scope.session is not None:
            await self.summaries.summarize_session_end(scope)


def default_steps(ctx: AsyncLayerContext) -> list[AsyncIngestStep]:
    """This layer group's steps sharing one short-term service (the lead adds the others)."""
    short = AsyncShortTermService(ctx)
    summaries = AsyncSummaryService(ctx, short)
    return [
        AsyncMidTermStep(ctx, short, AsyncMidTermService(ctx), summaries),
        AsyncSummaryStep(ctx, summaries),
    ]
