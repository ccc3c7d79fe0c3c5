"""Every layer service of one Memory, built once over a shared :class:`LayerContext`."""

from __future__ import annotations

from dataclasses import dataclass

from ..jobs import Job
from ..scope import Scope
from .base import IngestStep, LayerContext
from .episodic import ConversationEpisodeStep, EpisodeService
from .key import KeyMemoryService
from .knowledge import KnowledgeService
from .mid_term import MidTermService
from .pipeline import MidTermStep, Pipeline, SummaryStep
from .procedural import ProceduralService
from .semantic import FactExtractionStep, FactService
from .short_term import ShortTermService
from .summaries import SummaryService
from .working import TaskService

__all__ = ["CLUSTER_HITS", "LayerStack"]

CLUSTER_HITS = "cluster_hits"


@dataclass(frozen=True, slots=True)
class LayerStack:
    ctx: LayerContext
    short_term: ShortTermService
    mid_term: MidTermService
    summaries: SummaryService
    key: KeyMemoryService
    facts: FactService
    episodes: EpisodeService
    knowledge: KnowledgeService
    procedures: ProceduralService
    tasks: TaskService
    pipeline: Pipeline

    @classmethod
    def build(cls, ctx: LayerContext) -> LayerStack:
        short = ShortTermService(ctx)
        mid = MidTermService(ctx)
        summaries = SummaryService(ctx, short)
        episodes = EpisodeService(ctx)
        procedures = ProceduralService(ctx)
        steps: list[IngestStep] = [
            MidTermStep(ctx, short, mid, summaries),
            SummaryStep(ctx, summaries),
            FactExtractionStep(ctx),
            ConversationEpisodeStep(ctx),
        ]
        return cls(
            ctx,
            short,
            mid,
            summaries,
            KeyMemoryService(ctx),
            FactService(ctx),
            episodes,
            KnowledgeService(ctx),
            procedures,
            TaskService(ctx, episodes, procedures),
            Pipeline(ctx, steps),
        )

    def handlers(self) -> dict[str, object]:
        def cluster_hits(job: Job) -> None:
            scope = Scope(job.tenant, job.user, job.agent, job.session)
            ids = list(job.payload["ids"])
            if job.payload.get("promote"):  # hits counted by build_context already
                self.mid_term.promote_due(scope, ids)
            else:
                self.mid_term.count_hits(scope, ids)

        return {**self.pipeline.handlers(), CLUSTER_HITS: cluster_hits}
