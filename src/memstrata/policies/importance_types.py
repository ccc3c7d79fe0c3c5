"""The instant importance score and the refine job (pure); re-exported by
:mod:`memstrata.policies.importance`."""

from __future__ import annotations

from datetime import datetime

from memstrata.jobs import Job
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.records import MemoryRecord, new_id

__all__ = ["REFINE_IMPORTANCE", "heuristic_importance", "make_refine_job", "needs_refinement"]

REFINE_IMPORTANCE = "refine_importance"
_HEURISTIC = HeuristicLLM()


def heuristic_importance(text: str) -> float:
    """The instant, offline score used on the caller's thread."""
    return _HEURISTIC.score_importance(text)


def needs_refinement(llm: object) -> bool:
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
