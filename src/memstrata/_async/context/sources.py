"""The layers as :class:`ContextSources` for the context builder."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from memstrata._async.layers.stack import CLUSTER_HITS, AsyncLayerStack
from memstrata._async.layers.working import current_query
from memstrata._async.layers.working import render as render_task
from memstrata._async.search.hybrid import AsyncRankedHits
from memstrata._async.store.base import Vector
from memstrata.context.standing import Standing
from memstrata.context.temporal import Period
from memstrata.filters import Filters
from memstrata.jobs import Job
from memstrata.layers.key_types import key_order
from memstrata.records import MemoryRecord, RecordType, new_id
from memstrata.scope import Scope
from memstrata.search.hit import SearchHit
from memstrata.store.types import ListQuery, RecordView

__all__ = ["AsyncLayerSources", "RELEVANT_TYPES"]

# Everything "relevant" is drawn from; key memory, task state and facts have blocks of their
# own (facts also come in by similarity through FactService.relevant).
RELEVANT_TYPES = frozenset(
    {
        RecordType.MESSAGE,
        RecordType.EPISODE,
        RecordType.CLUSTER,
        RecordType.KNOWLEDGE,
        RecordType.NOTE,
        RecordType.SUMMARY,
        RecordType.PROCEDURE,
    }
)

_SUMMARIES = Filters(types=frozenset({RecordType.SUMMARY}))

_FACTS = frozenset({RecordType.FACT})
_MESSAGES = frozenset({RecordType.MESSAGE})
_CLUSTERS = frozenset({RecordType.CLUSTER})

Search = Callable[[Scope, str, int, Filters, Vector], Awaitable[list[SearchHit]]]  # async-only
Ranked = Callable[[Scope, str, int, Filters, Vector], Awaitable[AsyncRankedHits]]  # async-only
# sync: Search = Callable[[Scope, str, int, Filters, Vector], list[SearchHit]]
# sync: Ranked = Callable[[Scope, str, int, Filters, Vector], RankedHits]


class AsyncLayerSources:
    def __init__(
        self, layers: AsyncLayerStack, search: Search, ranked: Ranked | None = None
    ) -> None:
        self._layers = layers
        self._search = search
        self._ranked = ranked

    async def embed_query(self, scope: Scope, query: str) -> Vector:
        """``query`` (already redacted) embedded among the cache entries of the one who
        asks (``embedder/cache.py``: a user cannot time another's questions)."""
        embedder = self._layers.ctx.embedder_for(scope)
        vector: Vector = (await embedder.embed_batch([query], query=True))[0]
        return vector

    async def standing(self, scope: Scope, user_scope: Scope, summaries: int | None) -> Standing:
        """Key memory (``user_scope``), with a session the active task and the history
        window (``scope``), and the newest ``summaries`` summaries (none if ``None``): one
        store read (``list_many``) where each layer's own would take one each; a window
        whose first page falls short reads on."""
        layers = self._layers
        window = layers.short_term.recent_query(scope) if scope.session else None
        queries = [layers.key.list_query(user_scope)]
        if window is not None:
            queries += [current_query(scope), window]
        if summaries is not None:
            # Newest first straight from the store: a long-lived user has hundreds.
            queries.append(ListQuery(user_scope, _SUMMARIES, summaries, newest_first=True))
        got = iter(await layers.ctx.store.list_many(queries))
        key = key_order(next(got))
        working: tuple[MemoryRecord, str] | None = None
        history: list[MemoryRecord] = []
        if window is not None:
            tasks = next(got)
            working = _task_state(tasks[0]) if tasks else None
            history = await layers.short_term.render_from(window, next(got))
        return Standing(key, working, history, next(got) if summaries is not None else [])

    async def facts(self, scope: Scope, vector: Vector, limit: int) -> list[MemoryRecord]:
        """The ``limit`` profile facts most similar to the query, best first (the builder
        scores them: context/fact_rank.py)."""
        return await self._layers.facts.relevant(scope, vector, limit)

    async def records(self, scope: Scope, ids: Sequence[str]) -> list[MemoryRecord]:
        return await self._layers.ctx.store.get_many(scope, ids)

    async def neighbours(
        self, scope: Scope, record: MemoryRecord, after: bool
    ) -> list[MemoryRecord]:
        """The turn just before ``record`` in its session and, when ``after``, the one just
        after it."""
        if record.session is None:
            return []
        store = self._layers.ctx.store
        where = scope.with_session(record.session)
        out = await store.list(
            where,
            Filters(types=_MESSAGES, observed_before=record.observed_at),
            limit=1,
            newest_first=True,
        )
        if after:
            later = await store.list(
                where,
                Filters(types=_MESSAGES, observed_after=record.observed_at),
                limit=2,
                newest_first=False,
            )
            out += [r for r in later if r.id != record.id][:1]
        return out

    async def relevant(
        self,
        scope: Scope,
        query: str,
        limit: int,
        vector: Vector,
        *,
        facts: bool = False,
        period: Period | None = None,
        clusters: bool = True,
    ) -> list[SearchHit]:
        types = RELEVANT_TYPES | _FACTS if facts else RELEVANT_TYPES
        if not clusters:
            types = types - _CLUSTERS
        filters = Filters(types=types)
        if period is not None:
            filters = Filters(types=types, observed_after=period.start, observed_before=period.end)
        return await self._search(scope, query, limit, filters, vector)

    async def ranked(
        self, scope: Scope, query: str, limit: int, vector: Vector, *, facts: bool, clusters: bool
    ) -> AsyncRankedHits:
        """As :meth:`relevant` (no period), the hits decoded as the context packs them."""
        types = RELEVANT_TYPES | _FACTS if facts else RELEVANT_TYPES
        if not clusters:
            types = types - _CLUSTERS
        if self._ranked is None:
            return AsyncRankedHits.of(
                scope, await self._search(scope, query, limit, Filters(types=types), vector)
            )
        return await self._ranked(scope, query, limit, Filters(types=types), vector)

    async def clusters(
        self, scope: Scope, vector: Vector, limit: int
    ) -> list[tuple[MemoryRecord, float]]:
        """The ``limit`` mid-term clusters whose centroids are closest to the query (PMemo's
        "top-k clusters by similarity"), with their cosine, best first."""
        if limit <= 0:
            return []
        return await self._layers.ctx.store.vector_records(
            scope, vector, limit, Filters(types=_CLUSTERS)
        )

    async def shown(self, scope: Scope, records: Sequence[MemoryRecord | RecordView]) -> None:
        """Count what a context showed, and only that: an access on each record, a hit on
        each cluster (PMemo counts a hit per recall). Both are counters the store buffers,
        so the read path takes no write lock; a cluster whose hits reach ``promote_hits``
        is promoted by a background job (a version is a write). A cluster shown from its
        view is read (its hits are in its content). A caller's context (another user
        reading what was shared) counts nothing: no access, no hit, no promotion (the
        owner's retention and key memory are the owner's; until session 27 they counted)."""
        if not records or scope.caller is not None:
            return
        ctx = self._layers.ctx
        now = ctx.clock.now()
        await ctx.store.touch(scope, list(dict.fromkeys(r.id for r in records)), now)
        shown = [r for r in records if r.type is RecordType.CLUSTER]
        clusters = [r for r in shown if isinstance(r, MemoryRecord)]
        viewed = [r.id for r in shown if isinstance(r, RecordView)]
        if viewed:
            clusters += await ctx.store.get_many(scope, viewed)
        due = await self._layers.mid_term.count_shown(scope, clusters)
        if not due:
            return
        await ctx.store.enqueue(
            [
                Job(
                    id=new_id(),
                    kind=CLUSTER_HITS,
                    tenant=scope.tenant,
                    user=scope.user,
                    payload={"ids": due, "promote": True},
                    created_at=now,
                    run_after=now,
                    agent=scope.agent,
                )
            ]
        )


def _task_state(task: MemoryRecord) -> tuple[MemoryRecord, str]:
    # The assembler adds the block header; keep the rendered state without its own.
    lines = render_task(task).splitlines()
    if lines and lines[0].startswith("#"):
        lines = lines[1:]
    return task, "\n".join(lines)
