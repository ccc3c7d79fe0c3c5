"""Importance of a memory written without one: the heuristic now, the LLM later (issue 7 §8).

``add()`` never waits on a language model: a record stored without an importance gets the
offline heuristic's score at once, and when the configured LLM is a real model a background
job (``refine_importance``) asks it afterwards and writes the answer as a new version. The
job only touches the version it was queued for: if the record was updated, merged, deleted
or purged since, the caller's change wins and the job does nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace

from memstrata._async.layers.base import AsyncLayerContext
from memstrata.errors import NotFoundError, ValidationError
from memstrata.jobs import Job
from memstrata.policies.importance_types import (
    REFINE_IMPORTANCE,
    heuristic_importance,
    make_refine_job,
    needs_refinement,
)
from memstrata.scope import Scope
from memstrata.validation import check_unit

__all__ = [
    "REFINE_IMPORTANCE",
    "heuristic_importance",
    "make_refine_job",
    "needs_refinement",
    "refine_handler",
]


def refine_handler(ctx: AsyncLayerContext) -> Callable[[Job], Awaitable[None]]:
    async def refine(job: Job) -> None:
        rid, version = job.payload.get("id"), job.payload.get("version")
        if not isinstance(rid, str) or not isinstance(version, int):
            raise ValidationError(f"{REFINE_IMPORTANCE} job {job.id} has no record id/version")
        scope = Scope(job.tenant, job.user, job.agent, job.session)
        try:
            record = await ctx.store.get(scope, rid)
        except NotFoundError:
            return  # deleted or purged since
        if record.version != version:
            return  # changed since: that change wins
        score = check_unit(await ctx.llm.score_importance(record.text), "importance")
        if score == record.importance:
            return
        new = replace(
            record,
            importance=score,
            version=version + 1,
            updated_at=ctx.clock.now(),
            metadata={**record.metadata, "importance_by": ctx.llm.name},
        )
        await ctx.replace(scope, new, expected_version=version, reindex=False)

    return refine
