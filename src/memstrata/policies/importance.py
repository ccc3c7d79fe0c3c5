"""Importance of a memory written without one: the heuristic now, the LLM later (issue 7 §8).

``add()`` never waits on a language model: a record stored without an importance gets the
offline heuristic's score at once, and when the configured LLM is a real model a background
job (``refine_importance``) asks it afterwards and writes the answer as a new version. The
job only touches the version it was queued for: if the record was updated, merged, deleted
or purged since, the caller's change wins and the job does nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from ..errors import NotFoundError, ValidationError
from ..jobs import Job
from ..layers.base import LayerContext
from ..llm.base import LLM
from ..llm.heuristic import HeuristicLLM
from ..records import MemoryRecord, new_id
from ..scope import Scope
from ..validation import check_unit

__all__ = [
    "REFINE_IMPORTANCE",
    "heuristic_importance",
    "make_refine_job",
    "needs_refinement",
    "refine_handler",
]

REFINE_IMPORTANCE = "refine_importance"
_HEURISTIC = HeuristicLLM()


def heuristic_importance(text: str) -> float:
    """The instant, offline score used on the caller's thread."""
    return _HEURISTIC.score_importance(text)


def needs_refinement(llm: LLM) -> bool:
    """Whether a background pass could improve on the heuristic (a real model is set)."""
    return not isinstance(llm, HeuristicLLM)


def make_refine_job(record: MemoryRecord, now: datetime) -> Job:
    return Job(
        id=new_id(),
        kind=REFINE_IMPORTANCE,
        tenant=record.tenant,
        user=record.user,
        payload={"id": record.id, "version": record.version},
        created_at=now,
        run_after=now,
        agent=record.agent,
        session=record.session,
        dedup_key=f"{REFINE_IMPORTANCE}:{record.id}",
    )


def refine_handler(ctx: LayerContext) -> Callable[[Job], None]:
    def refine(job: Job) -> None:
        rid, version = job.payload.get("id"), job.payload.get("version")
        if not isinstance(rid, str) or not isinstance(version, int):
            raise ValidationError(f"{REFINE_IMPORTANCE} job {job.id} has no record id/version")
        scope = Scope(job.tenant, job.user, job.agent, job.session)
        try:
            record = ctx.store.get(scope, rid)
        except NotFoundError:
            return  # deleted or purged since
        if record.version != version:
            return  # changed since: that change wins
        score = check_unit(ctx.llm.score_importance(record.text), "importance")
        if score == record.importance:
            return
        new = replace(
            record,
            importance=score,
            version=version + 1,
            updated_at=ctx.clock.now(),
            metadata={**record.metadata, "importance_by": ctx.llm.name},
        )
        ctx.replace(scope, new, expected_version=version, reindex=False)

    return refine
