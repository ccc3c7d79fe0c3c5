"""The one seam between the HTTP/MCP edges and the memory: an async interface.

Endpoints and MCP tools ``await`` a :class:`MemoryBackend`; they never call the memory
directly. :class:`Backend` implements it once, written against :class:`AsyncMemory`'s API,
over either memory:

- an :class:`~memstrata.AsyncMemory` (what ``memstrata serve`` and ``memstrata mcp`` run):
  each call is awaited on the server's event loop, no thread per call (PostgreSQL, Redis
  and OpenAI wait natively; SQLite's calls run on the store's own threads);
- a sync :class:`~memstrata.Memory` (an application embedding ``create_app(Memory(...))``):
  the same call runs on a worker thread (:class:`ThreadedBackend`).

The only difference is how a call is made (:class:`~memstrata.server.calls.Call`):
``Memory`` is the generated sync twin of ``AsyncMemory``, so the same attribute paths name
the same operations in both.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator, Mapping, Sequence
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any, Protocol, cast

import anyio.to_thread

from ..audit import AuditEvent
from ..context.assemble import AssembledContext
from ..errors import EmbeddingMismatchError
from ..filters import Filters
from ..jobs import Job
from ..layers.episodic_types import EpisodeHit
from ..layers.procedural_types import FailureWarning, Suggestion
from ..layers.semantic_types import FactOutcome
from ..layers.working import TaskCompletion
from ..llm.models import ExtractedFact
from ..maintenance_types import LogEntry, MaintenanceReport
from ..memory import Memory
from ..portability import ImportReport
from ..records import MemoryRecord, Message, Source
from ..scope import Scope
from ..search.hit import SearchHit
from ..store import one_model
from ..store.base import PurgeReport
from ..worker import RunReport
from .calls import Call, awaited, in_thread
from .inspect import LayersView, layers_view

if TYPE_CHECKING:
    from ..aio import AsyncMemory

__all__ = [
    "Backend",
    "Call",
    "MemoryBackend",
    "ThreadedBackend",
    "awaited",
    "in_thread",
]


class MemoryBackend(Protocol):
    """Everything the server asks of the memory, as coroutines."""

    async def ready(self) -> None: ...
    async def add_messages(
        self, scope: Scope, messages: Sequence[Message]
    ) -> list[MemoryRecord]: ...
    async def add(self, scope: Scope, content: str, **kwargs: Any) -> MemoryRecord: ...
    async def get(
        self, scope: Scope, record_id: str, *, include_deleted: bool = False
    ) -> MemoryRecord: ...
    async def list_records(
        self, scope: Scope, filters: Filters, *, limit: int, offset: int, newest_first: bool
    ) -> tuple[list[MemoryRecord], int]: ...
    async def update(
        self, scope: Scope, record_id: str, *, expected_version: int, **changes: Any
    ) -> MemoryRecord: ...
    async def delete(
        self, scope: Scope, record_id: str, *, actor: str = "library"
    ) -> MemoryRecord: ...
    async def restore(
        self, scope: Scope, record_id: str, *, actor: str = "library"
    ) -> MemoryRecord: ...
    async def purge(
        self, scope: Scope, record_ids: Sequence[str] | None, *, actor: str = "library"
    ) -> PurgeReport: ...
    async def audit(self, tenant: str, **filters: Any) -> list[AuditEvent]: ...
    async def set_access(
        self,
        scope: Scope,
        record_id: str,
        *,
        visibility: str | None,
        allowed_users: Sequence[str] | None,
        allowed_roles: Sequence[str] | None,
        actor: str = "library",
    ) -> MemoryRecord: ...
    async def history(self, scope: Scope, record_id: str) -> list[MemoryRecord]: ...
    async def search(
        self,
        scope: Scope,
        query: str,
        top_k: int,
        *,
        layers: Sequence[str] | None,
        filters: Mapping[str, Any] | None,
        mode: str | None,
        explain: bool,
    ) -> list[SearchHit]: ...
    async def build_context(
        self,
        scope: Scope,
        query: str | None,
        token_budget: int,
        system_prompt: str | None,
        reserve_ratio: float | None,
    ) -> AssembledContext: ...
    async def key_list(self, scope: Scope) -> list[MemoryRecord]: ...
    async def key_set(self, scope: Scope, text: str, priority: int) -> MemoryRecord: ...
    async def key_edit(
        self,
        scope: Scope,
        record_id: str,
        *,
        expected_version: int,
        text: str | None,
        priority: int | None,
    ) -> MemoryRecord: ...
    async def key_remove(self, scope: Scope, record_id: str) -> None: ...
    async def task_current(self, scope: Scope) -> MemoryRecord | None: ...
    async def task_start(self, scope: Scope, goal: str, steps: Sequence[str]) -> MemoryRecord: ...
    async def task_step(
        self, scope: Scope, index: int, status: str, result: str | None, error: str | None
    ) -> MemoryRecord: ...
    async def task_note(self, scope: Scope, text: str, tool: str | None) -> MemoryRecord: ...
    async def task_complete(
        self, scope: Scope, success: bool, outcome: str, feedback: str
    ) -> TaskCompletion: ...
    async def end_session(self, scope: Scope) -> RunReport: ...
    async def run_jobs(self, scope: Scope) -> RunReport: ...
    async def jobs(self, scope: Scope, status: str | None) -> list[Job]: ...
    async def stats(self, scope: Scope) -> dict[str, Any]: ...
    def export(
        self,
        scope: Scope,
        *,
        include_embeddings: bool,
        include_deleted: bool,
        include_history: bool = True,
    ) -> AsyncIterator[str]:
        """The export's text as it is produced, a page of records a chunk."""
        ...

    async def import_records(self, fp: IO[str], into: Scope) -> ImportReport: ...
    async def layers(self, scope: Scope, limit: int) -> LayersView: ...
    # --- the layer services and maintenance (routes/facts.py ... routes/maintenance.py) --
    async def facts(self, scope: Scope, min_confidence: float) -> list[MemoryRecord]: ...
    async def fact(self, scope: Scope, key: str) -> MemoryRecord | None: ...
    async def fact_history(self, scope: Scope, key: str) -> list[MemoryRecord]: ...
    async def relevant_facts(
        self, scope: Scope, query: str | None, limit: int | None, min_confidence: float | None
    ) -> list[MemoryRecord]: ...
    async def upsert_fact(
        self,
        scope: Scope,
        fact: ExtractedFact,
        source_ids: Sequence[str],
        *,
        expires_at: datetime | None,
        source: Source,
        observed_at: datetime | None,
    ) -> FactOutcome: ...
    async def recall_episodes(
        self, scope: Scope, query: str, k: int | None
    ) -> list[EpisodeHit]: ...
    async def session_episode(self, scope: Scope) -> MemoryRecord | None: ...
    async def record_feedback(
        self, scope: Scope, text: str, source_ids: Sequence[str]
    ) -> MemoryRecord: ...
    async def suggest_procedure(self, scope: Scope, query: str) -> Suggestion | None: ...
    async def failure_warnings(
        self, scope: Scope, text: str, limit: int
    ) -> list[FailureWarning]: ...
    async def add_failure_pattern(
        self,
        scope: Scope,
        pattern: str,
        indicators: Sequence[str],
        mitigation: str,
        severity: int,
    ) -> MemoryRecord: ...
    async def ingest_knowledge(
        self,
        scope: Scope,
        text: str,
        qa_id: str | None,
        title: str | None,
        *,
        importance: float,
        tags: Sequence[str],
    ) -> list[MemoryRecord]: ...
    async def knowledge_chunks(self, scope: Scope, qa_id: str) -> list[MemoryRecord]: ...
    async def forget(
        self, scope: Scope, record_ids: Sequence[str], *, reason: str, actor: str
    ) -> list[LogEntry]: ...
    async def maintain(
        self,
        scope: Scope,
        *,
        policy: str,
        dry_run: bool,
        consolidate: bool,
        actor: str,
        now: datetime | None,
    ) -> MaintenanceReport: ...
    async def set_importance_by_tag(
        self, scope: Scope, tag: str, importance: float, *, actor: str
    ) -> list[MemoryRecord]: ...


class Backend:
    """:class:`MemoryBackend` over an ``AsyncMemory`` (each call awaited) or a sync
    ``Memory`` (each call on a worker thread); ``call`` is chosen from the memory's kind."""

    def __init__(self, memory: AsyncMemory | Memory, *, call: Call | None = None) -> None:
        self.memory = memory
        # Typed as the async API: a sync Memory's methods have the same names and arguments
        # and return the awaited values; `in_thread` runs them.
        self._mem = cast("AsyncMemory", memory)
        self._call: Call = call or (in_thread if isinstance(memory, Memory) else awaited)

    async def ready(self) -> None:
        """The store answers, and holds vectors of this server's embedding model: a server
        another process's ``memstrata reembed`` left behind is not ready (it would refuse
        every search and write), so a load balancer takes it out until it is restarted."""
        store = self._mem.store
        model = await self._call(store.get_meta, one_model.MODEL_KEY)
        dims = await self._call(store.get_meta, one_model.DIMS_KEY)
        embedder = self._mem.embedder
        if one_model.holds_another(model, dims, embedder.model_id, embedder.dims):
            raise EmbeddingMismatchError(
                f"the store now holds vectors of embedding model {model!r} ({dims} dims), not "
                f"of {embedder.model_id!r} ({embedder.dims} dims) that this server embeds with"
            )

    async def add_messages(self, scope: Scope, messages: Sequence[Message]) -> list[MemoryRecord]:
        return await self._call(self._mem.add_messages, scope, messages)

    async def add(self, scope: Scope, content: str, **kwargs: Any) -> MemoryRecord:
        return await self._call(self._mem.add, scope, content, **kwargs)

    async def get(
        self, scope: Scope, record_id: str, *, include_deleted: bool = False
    ) -> MemoryRecord:
        return await self._call(self._mem.get, scope, record_id, include_deleted=include_deleted)

    async def list_records(
        self, scope: Scope, filters: Filters, *, limit: int, offset: int, newest_first: bool
    ) -> tuple[list[MemoryRecord], int]:
        items = await self._call(
            self._mem.list,
            scope,
            filters=filters,
            limit=limit,
            offset=offset,
            newest_first=newest_first,
        )
        return items, await self._call(self._mem.store.count, scope, filters)

    async def update(
        self, scope: Scope, record_id: str, *, expected_version: int, **changes: Any
    ) -> MemoryRecord:
        return await self._call(
            self._mem.update, scope, record_id, expected_version=expected_version, **changes
        )

    async def delete(self, scope: Scope, record_id: str, *, actor: str = "library") -> MemoryRecord:
        return await self._call(self._mem.delete, scope, record_id, actor=actor)

    async def restore(
        self, scope: Scope, record_id: str, *, actor: str = "library"
    ) -> MemoryRecord:
        return await self._call(self._mem.restore, scope, record_id, actor=actor)

    async def purge(
        self, scope: Scope, record_ids: Sequence[str] | None, *, actor: str = "library"
    ) -> PurgeReport:
        return await self._call(self._mem.purge, scope, record_ids, actor=actor)

    async def audit(self, tenant: str, **filters: Any) -> list[AuditEvent]:
        return await self._call(self._mem.audit.query, tenant, **filters)

    async def set_access(
        self,
        scope: Scope,
        record_id: str,
        *,
        visibility: str | None,
        allowed_users: Sequence[str] | None,
        allowed_roles: Sequence[str] | None,
        actor: str = "library",
    ) -> MemoryRecord:
        return await self._call(
            self._mem.set_access,
            scope,
            record_id,
            visibility=visibility,
            allowed_users=allowed_users,
            allowed_roles=allowed_roles,
            actor=actor,
        )

    async def history(self, scope: Scope, record_id: str) -> list[MemoryRecord]:
        return await self._call(self._mem.history, scope, record_id)

    async def search(
        self,
        scope: Scope,
        query: str,
        top_k: int,
        *,
        layers: Sequence[str] | None,
        filters: Mapping[str, Any] | None,
        mode: str | None,
        explain: bool,
    ) -> list[SearchHit]:
        return await self._call(
            self._mem.search,
            scope,
            query,
            top_k,
            layers=layers,
            filters=filters,
            mode=mode,
            explain=explain,
        )

    async def build_context(
        self,
        scope: Scope,
        query: str | None,
        token_budget: int,
        system_prompt: str | None,
        reserve_ratio: float | None,
    ) -> AssembledContext:
        return await self._call(
            self._mem.build_context,
            scope,
            query,
            token_budget,
            system_prompt,
            reserve_ratio=reserve_ratio,
        )

    async def key_list(self, scope: Scope) -> list[MemoryRecord]:
        return await self._call(self._mem.key.list, scope)

    async def key_set(self, scope: Scope, text: str, priority: int) -> MemoryRecord:
        return await self._call(self._mem.key.set, scope, text, priority)

    async def key_edit(
        self,
        scope: Scope,
        record_id: str,
        *,
        expected_version: int,
        text: str | None,
        priority: int | None,
    ) -> MemoryRecord:
        return await self._call(
            self._mem.key.edit,
            scope,
            record_id,
            expected_version=expected_version,
            text=text,
            priority=priority,
        )

    async def key_remove(self, scope: Scope, record_id: str) -> None:
        await self._call(self._mem.key.remove, scope, record_id)

    async def task_current(self, scope: Scope) -> MemoryRecord | None:
        return await self._call(self._mem.tasks.current, scope)

    async def task_start(self, scope: Scope, goal: str, steps: Sequence[str]) -> MemoryRecord:
        return await self._call(self._mem.tasks.start, scope, goal, steps)

    async def task_step(
        self, scope: Scope, index: int, status: str, result: str | None, error: str | None
    ) -> MemoryRecord:
        return await self._call(
            self._mem.tasks.update_step, scope, index, status, result=result, error=error
        )

    async def task_note(self, scope: Scope, text: str, tool: str | None) -> MemoryRecord:
        return await self._call(self._mem.tasks.note, scope, text, tool=tool)

    async def task_complete(
        self, scope: Scope, success: bool, outcome: str, feedback: str
    ) -> TaskCompletion:
        return await self._call(self._mem.tasks.complete, scope, success, outcome, feedback)

    async def end_session(self, scope: Scope) -> RunReport:
        return await self._call(self._mem.end_session, scope)

    async def run_jobs(self, scope: Scope) -> RunReport:
        return await self._call(self._mem.flush, scope)

    async def jobs(self, scope: Scope, status: str | None) -> list[Job]:
        return await self._call(self._mem.store.list_jobs, scope.tenant, scope.user, status=status)

    async def stats(self, scope: Scope) -> dict[str, Any]:
        return await self._call(self._mem.stats, scope)

    def export(
        self,
        scope: Scope,
        *,
        include_embeddings: bool,
        include_deleted: bool,
        include_history: bool = True,
    ) -> AsyncIterator[str]:
        """``export_chunks`` as it is produced: iterated on the event loop for an
        ``AsyncMemory``; for a sync ``Memory`` each chunk is made on a worker thread, the
        next only once this one is taken (a slow client holds back the walk, not memory)."""
        chunks = self._mem.export_chunks(
            scope,
            include_embeddings=include_embeddings,
            include_deleted=include_deleted,
            include_history=include_history,
        )
        if isinstance(self.memory, Memory):
            return _made_in_threads(cast("Generator[str, None, None]", chunks))
        return chunks

    async def import_records(self, fp: IO[str], into: Scope) -> ImportReport:
        return await self._call(self._mem.import_records, fp, into=into)

    async def layers(self, scope: Scope, limit: int) -> LayersView:
        return await layers_view(self._mem, scope, limit, call=self._call)

    # --- the layer services and maintenance ----------------------------------------------
    async def facts(self, scope: Scope, min_confidence: float) -> list[MemoryRecord]:
        return await self._call(self._mem.facts.all, scope, min_confidence=min_confidence)

    async def fact(self, scope: Scope, key: str) -> MemoryRecord | None:
        return await self._call(self._mem.facts.get, scope, key)

    async def fact_history(self, scope: Scope, key: str) -> list[MemoryRecord]:
        return await self._call(self._mem.facts.history, scope, key)

    async def relevant_facts(
        self, scope: Scope, query: str | None, limit: int | None, min_confidence: float | None
    ) -> list[MemoryRecord]:
        return await self._call(
            self._mem.facts.relevant, scope, query, limit=limit, min_confidence=min_confidence
        )

    async def upsert_fact(
        self,
        scope: Scope,
        fact: ExtractedFact,
        source_ids: Sequence[str],
        *,
        expires_at: datetime | None,
        source: Source,
        observed_at: datetime | None,
    ) -> FactOutcome:
        return await self._call(
            self._mem.facts.upsert,
            scope,
            fact,
            source_ids,
            expires_at=expires_at,
            source=source,
            observed_at=observed_at,
        )

    async def recall_episodes(self, scope: Scope, query: str, k: int | None) -> list[EpisodeHit]:
        return await self._call(self._mem.episodes.recall, scope, query, k)

    async def session_episode(self, scope: Scope) -> MemoryRecord | None:
        return await self._call(self._mem.episodes.conversation_episode, scope)

    async def record_feedback(
        self, scope: Scope, text: str, source_ids: Sequence[str]
    ) -> MemoryRecord:
        return await self._call(
            self._mem.episodes.record_feedback, scope, text, source_ids=source_ids
        )

    async def suggest_procedure(self, scope: Scope, query: str) -> Suggestion | None:
        return await self._call(self._mem.procedures.suggest, scope, query)

    async def failure_warnings(self, scope: Scope, text: str, limit: int) -> list[FailureWarning]:
        return await self._call(self._mem.procedures.warnings, scope, text, limit)

    async def add_failure_pattern(
        self,
        scope: Scope,
        pattern: str,
        indicators: Sequence[str],
        mitigation: str,
        severity: int,
    ) -> MemoryRecord:
        return await self._call(
            self._mem.procedures.add_failure_pattern,
            scope,
            pattern,
            indicators,
            mitigation,
            severity,
        )

    async def ingest_knowledge(
        self,
        scope: Scope,
        text: str,
        qa_id: str | None,
        title: str | None,
        *,
        importance: float,
        tags: Sequence[str],
    ) -> list[MemoryRecord]:
        return await self._call(
            self._mem.knowledge.ingest, scope, text, qa_id, title, importance=importance, tags=tags
        )

    async def knowledge_chunks(self, scope: Scope, qa_id: str) -> list[MemoryRecord]:
        """The live chunks of document ``qa_id``, in order (``mem.knowledge.chunks``)."""
        return await self._call(self._mem.knowledge.chunks, scope, qa_id)

    async def forget(
        self, scope: Scope, record_ids: Sequence[str], *, reason: str, actor: str
    ) -> list[LogEntry]:
        return await self._call(self._mem.forget, scope, record_ids, reason=reason, actor=actor)

    async def maintain(
        self,
        scope: Scope,
        *,
        policy: str,
        dry_run: bool,
        consolidate: bool,
        actor: str,
        now: datetime | None,
    ) -> MaintenanceReport:
        return await self._call(
            self._mem.maintain,
            scope,
            policy=policy,
            dry_run=dry_run,
            consolidate=consolidate,
            actor=actor,
            now=now,
        )

    async def set_importance_by_tag(
        self, scope: Scope, tag: str, importance: float, *, actor: str
    ) -> list[MemoryRecord]:
        return await self._call(
            self._mem.set_importance_by_tag, scope, tag, importance, actor=actor
        )


class ThreadedBackend(Backend):
    """:class:`Backend` over a sync ``Memory``: each call on a worker thread."""

    def __init__(self, memory: Memory) -> None:
        super().__init__(memory, call=in_thread)


async def _made_in_threads(chunks: Generator[str, None, None]) -> AsyncIterator[str]:
    """The items of a sync generator, each made on a worker thread; the generator is closed
    on one too (its ``finally`` blocks may read the store) when the caller stops early."""
    done = object()
    try:
        while True:
            item: object = await anyio.to_thread.run_sync(next, chunks, done)
            if item is done:
                return
            yield cast(str, item)
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(chunks.close)
