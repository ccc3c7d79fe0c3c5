"""Every layer service of one Memory, built once over a shared :class:`AsyncLayerContext`."""

from __future__ import annotations

from dataclasses import dataclass

from memstrata._async.layers.base import AsyncIngestStep, AsyncLayerContext
from memstrata._async.layers.episodic import AsyncConversationEpisodeStep, AsyncEpisodeService
from memstrata._async.layers.key import AsyncKeyMemoryService
from memstrata._async.layers.knowledge import AsyncKnowledgeService
from memstrata._async.layers.mid_term import AsyncMidTermService
from memstrata._async.layers.pipeline import AsyncMidTermStep, AsyncPipeline, AsyncSummaryStep
from memstrata._async.layers.procedural import AsyncProceduralService
from memstrata._async.layers.semantic import AsyncFactExtractionStep, AsyncFactService
from memstrata._async.layers.short_term import AsyncShortTermService
from memstrata._async.layers.summaries import AsyncSummaryService
from memstrata._async.layers.working import AsyncTaskService
from memstrata.jobs import Job
from memstrata.layers.types import CLUSTER_HITS
from memstrata.scope import Scope

__all__ = ["CLUSTER_HITS", "AsyncLayerStack"]


@dataclass(frozen=True, slots=True)
class AsyncLayerStack:
    ctx: AsyncLayerContext
    short_term: AsyncShortTermService
    mid_term: AsyncMidTermService
    summaries: AsyncSummaryService
    key: AsyncKeyMemoryService
    facts: AsyncFactService
    episodes: AsyncEpisodeService
    knowledge: AsyncKnowledgeService
    procedures: AsyncProceduralService
    tasks: AsyncTaskService
    pipeline: AsyncPipeline

    @classmethod
    def build(cls, ctx: AsyncLayerContext) -> AsyncLayerStack:
        """The services a caller reaches (``mem.key``, ``facts``, ``episodes``, ``knowledge``,
        ``procedures``, ``tasks``) admit their writes under ``ctx``'s quotas; what the
        library derives on its own (the ingest steps, mid-term clusters and the key entries
        they promote, summaries) runs over ``ctx.for_system()``: counted, never refused.
        A completed task's episode and patterns are the caller's call: ``tasks.complete``
        admits them all at once, so its own episode and procedure services admit nothing."""
        system = ctx.for_system()
        short = AsyncShortTermService(system)
        mid = AsyncMidTermService(system)
        summaries = AsyncSummaryService(system, short)
        steps: list[AsyncIngestStep] = [
            AsyncMidTermStep(system, short, mid, summaries),
            AsyncSummaryStep(system, summaries),
            AsyncFactExtractionStep(system),
            AsyncConversationEpisodeStep(system),
        ]
        return cls(
            ctx,
            short,
            mid,
            summaries,
            AsyncKeyMemoryService(ctx),
            AsyncFactService(ctx),
            AsyncEpisodeService(ctx),
            AsyncKnowledgeService(ctx),
            AsyncProceduralService(ctx),
            AsyncTaskService(ctx, AsyncEpisodeService(system), AsyncProceduralService(system)),
            AsyncPipeline(system, steps),
        )

    def handlers(self) -> dict[str, object]:
        async def cluster_hits(job: Job) -> None:
            scope = Scope(job.tenant, job.user, job.agent, job.session)
            ids = list(job.payload["ids"])
            if job.payload.get("promote"):  # hits counted by build_context already
                await self.mid_term.promote_due(scope, ids)
            else:
                await self.mid_term.count_hits(scope, ids)

        return {**self.pipeline.handlers(), CLUSTER_HITS: cluster_hits}
