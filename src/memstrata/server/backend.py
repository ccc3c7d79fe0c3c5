"""The one seam between the HTTP/MCP edges and the memory: an async interface.

Endpoints and MCP tools ``await`` a :class:`MemoryBackend`; they never call ``Memory``
directly. Today :class:`ThreadedBackend` implements it over the sync :class:`Memory`, running
each call in a worker thread (the SQLite store serialises its writes behind one lock, so
threads add concurrency for the network and JSON work around each call, not inside SQLite).
A natively async ``AsyncMemory`` replaces it by implementing the same methods with
``await`` and no thread, and nothing above this module changes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any, ParamSpec, Protocol, TypeVar

import anyio.to_thread

from ..audit import AuditEvent
from ..context.assemble import AssembledContext
from ..filters import Filters
from ..jobs import Job
from ..layers.working import TaskCompletion
from ..memory import Memory
from ..portability import ImportReport
from ..records import MemoryRecord, Message
from ..scope import Scope
from ..search.hit import SearchHit
from ..store.base import PurgeReport
from ..worker import RunReport
from .inspect import LayersView, layers_view

__all__ = ["MemoryBackend", "ThreadedBackend"]

P = ParamSpec("P")
T = TypeVar("T")


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
    async def export(
        self, scope: Scope, fp: IO[str], *, include_embeddings: bool, include_deleted: bool
    ) -> int: ...
    async def import_records(self, fp: IO[str], into: Scope) -> ImportReport: ...
    async def layers(self, scope: Scope, limit: int) -> LayersView: ...


class ThreadedBackend:
    """:class:`MemoryBackend` over the sync :class:`Memory`, one worker thread per call."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory

    async def _run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))

    async def ready(self) -> None:
        await self._run(self.memory.store.get_meta, "embedding_model")

    async def add_messages(self, scope: Scope, messages: Sequence[Message]) -> list[MemoryRecord]:
        return await self._run(self.memory.add_messages, scope, messages)

    async def add(self, scope: Scope, content: str, **kwargs: Any) -> MemoryRecord:
        return await self._run(self.memory.add, scope, content, **kwargs)

    async def get(
        self, scope: Scope, record_id: str, *, include_deleted: bool = False
    ) -> MemoryRecord:
        return await self._run(self.memory.get, scope, record_id, include_deleted=include_deleted)

    async def list_records(
        self, scope: Scope, filters: Filters, *, limit: int, offset: int, newest_first: bool
    ) -> tuple[list[MemoryRecord], int]:
        def page() -> tuple[list[MemoryRecord], int]:
            items = self.memory.list(
                scope, filters=filters, limit=limit, offset=offset, newest_first=newest_first
            )
            return items, self.memory.store.count(scope, filters)

        return await self._run(page)

    async def update(
        self, scope: Scope, record_id: str, *, expected_version: int, **changes: Any
    ) -> MemoryRecord:
        return await self._run(
            self.memory.update, scope, record_id, expected_version=expected_version, **changes
        )

    async def delete(self, scope: Scope, record_id: str, *, actor: str = "library") -> MemoryRecord:
        return await self._run(self.memory.delete, scope, record_id, actor=actor)

    async def restore(
        self, scope: Scope, record_id: str, *, actor: str = "library"
    ) -> MemoryRecord:
        return await self._run(self.memory.restore, scope, record_id, actor=actor)

    async def purge(
        self, scope: Scope, record_ids: Sequence[str] | None, *, actor: str = "library"
    ) -> PurgeReport:
        return await self._run(self.memory.purge, scope, record_ids, actor=actor)

    async def audit(self, tenant: str, **filters: Any) -> list[AuditEvent]:
        return await self._run(self.memory.audit.query, tenant, **filters)

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
        return await self._run(
            self.memory.set_access,
            scope,
            record_id,
            visibility=visibility,
            allowed_users=allowed_users,
            allowed_roles=allowed_roles,
            actor=actor,
        )

    async def history(self, scope: Scope, record_id: str) -> list[MemoryRecord]:
        return await self._run(self.memory.history, scope, record_id)

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
        return await self._run(
            self.memory.search,
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
        return await self._run(
            self.memory.build_context,
            scope,
            query,
            token_budget,
            system_prompt,
            reserve_ratio=reserve_ratio,
        )

    async def key_list(self, scope: Scope) -> list[MemoryRecord]:
        return await self._run(self.memory.key.list, scope)

    async def key_set(self, scope: Scope, text: str, priority: int) -> MemoryRecord:
        return await self._run(self.memory.key.set, scope, text, priority)

    async def key_edit(
        self,
        scope: Scope,
        record_id: str,
        *,
        expected_version: int,
        text: str | None,
        priority: int | None,
    ) -> MemoryRecord:
        return await self._run(
            self.memory.key.edit,
            scope,
            record_id,
            expected_version=expected_version,
            text=text,
            priority=priority,
        )

    async def key_remove(self, scope: Scope, record_id: str) -> None:
        await self._run(self.memory.key.remove, scope, record_id)

    async def task_current(self, scope: Scope) -> MemoryRecord | None:
        return await self._run(self.memory.tasks.current, scope)

    async def task_start(self, scope: Scope, goal: str, steps: Sequence[str]) -> MemoryRecord:
        return await self._run(self.memory.tasks.start, scope, goal, steps)

    async def task_step(
        self, scope: Scope, index: int, status: str, result: str | None, error: str | None
    ) -> MemoryRecord:
        return await self._run(
            self.memory.tasks.update_step, scope, index, status, result=result, error=error
        )

    async def task_note(self, scope: Scope, text: str, tool: str | None) -> MemoryRecord:
        return await self._run(self.memory.tasks.note, scope, text, tool=tool)

    async def task_complete(
        self, scope: Scope, success: bool, outcome: str, feedback: str
    ) -> TaskCompletion:
        return await self._run(self.memory.tasks.complete, scope, success, outcome, feedback)

    async def end_session(self, scope: Scope) -> RunReport:
        return await self._run(self.memory.end_session, scope)

    async def run_jobs(self, scope: Scope) -> RunReport:
        return await self._run(self.memory.flush, scope)

    async def jobs(self, scope: Scope, status: str | None) -> list[Job]:
        return await self._run(self.memory.store.list_jobs, scope.tenant, scope.user, status=status)

    async def stats(self, scope: Scope) -> dict[str, Any]:
        return await self._run(self.memory.stats, scope)

    async def export(
        self, scope: Scope, fp: IO[str], *, include_embeddings: bool, include_deleted: bool
    ) -> int:
        return await self._run(
            self.memory.export_records,
            scope,
            fp,
            include_embeddings=include_embeddings,
            include_deleted=include_deleted,
        )

    async def import_records(self, fp: IO[str], into: Scope) -> ImportReport:
        return await self._run(self.memory.import_records, fp, into=into)

    async def layers(self, scope: Scope, limit: int) -> LayersView:
        return await self._run(layers_view, self.memory, scope, limit)
