"""The layers as :class:`ContextSources` for the context builder."""

from __future__ import annotations

from collections.abc import Callable

from ..filters import Filters
from ..jobs import Job
from ..layers.stack import CLUSTER_HITS, LayerStack
from ..layers.working import render as render_task
from ..records import MemoryRecord, RecordType, new_id
from ..scope import Scope
from ..search.hit import SearchHit

__all__ = ["LayerSources", "RELEVANT_TYPES"]

# Everything "relevant" is drawn from; key memory, task state and facts have blocks of their
# own (facts also come in by similarity through FactService.relevant).
RELEVANT_TYPES = frozenset({RecordType.MESSAGE, RecordType.EPISODE, RecordType.CLUSTER,
                            RecordType.KNOWLEDGE, RecordType.NOTE, RecordType.SUMMARY,
                            RecordType.PROCEDURE})

_SUMMARIES = Filters(types=frozenset({RecordType.SUMMARY}))

Search = Callable[[Scope, str, int, Filters], list[SearchHit]]


class LayerSources:
    def __init__(self, layers: LayerStack, search: Search) -> None:
        self._layers = layers
        self._search = search

    def key(self, scope: Scope) -> list[MemoryRecord]:
        return self._layers.key.list(scope)

    def working(self, scope: Scope) -> tuple[MemoryRecord, str] | None:
        task = self._layers.tasks.current(scope)
        if task is None:
            return None
        # The assembler adds the block header; keep the rendered state without its own.
        lines = render_task(task).splitlines()
        if lines and lines[0].startswith("#"):
            lines = lines[1:]
        return task, "\n".join(lines)

    def history(self, scope: Scope) -> list[MemoryRecord]:
        return self._layers.short_term.render(scope)

    def summaries(self, scope: Scope, limit: int) -> list[MemoryRecord]:
        # Newest first straight from the store: a long-lived user has hundreds.
        return self._layers.ctx.store.list(scope, _SUMMARIES, limit=limit, newest_first=True)

    def facts(self, scope: Scope, query: str, limit: int) -> list[tuple[MemoryRecord, float]]:
        facts = self._layers.facts.relevant(scope, query, limit)
        # Ranked by similarity; scored to compete with mid-ranked search hits (fused scores
        # run from ~1.0 for a first place in both lists down to ~0.3).
        return [(f, 0.6 - i * 0.01) for i, f in enumerate(facts)]

    def relevant(self, scope: Scope, query: str, limit: int) -> list[SearchHit]:
        hits = self._search(scope, query, limit, Filters(types=RELEVANT_TYPES))
        clusters = [h.record.id for h in hits if h.record.type is RecordType.CLUSTER]
        if clusters:
            # PMemo counts a hit per retrieval; recorded off the read path, durably.
            ctx = self._layers.ctx
            now = ctx.clock.now()
            ctx.store.enqueue([Job(id=new_id(), kind=CLUSTER_HITS, tenant=scope.tenant,
                                   user=scope.user, payload={"ids": clusters}, created_at=now,
                                   run_after=now, agent=scope.agent)])
        return hits
