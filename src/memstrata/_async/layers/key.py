"""Key memory (PMemo's compass): topic, constraints and deadlines, always first in context.

Entries are ``key`` records at user level (no session: they hold across sessions). An entry
is either set by the user (``metadata.origin == "user"``) or promoted automatically from a
mid-term cluster whose hits passed the threshold (``origin == "auto"``, ``cluster_id`` names
the cluster). User-set entries outrank automatic ones (:func:`key_order`).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from memstrata._async.layers.base import AsyncLayerContext
from memstrata.calls import checked_calls
from memstrata.errors import NotFoundError, ValidationError
from memstrata.filters import Filters, MetadataCondition
from memstrata.layers.key_types import ORIGIN_AUTO, ORIGIN_USER, key_order, key_sort_key
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.records import (
    AccessControl,
    Content,
    MemoryRecord,
    RecordStatus,
    RecordType,
    Source,
    Visibility,
    new_id,
)
from memstrata.scope import Scope
from memstrata.store.types import ListQuery
from memstrata.text import content_hash, validate_content
from memstrata.validation import MAX_COUNT, check_id, check_int, check_read_version
from memstrata.writes import check_owner, check_scope

__all__ = ["AsyncKeyMemoryService", "key_order", "key_sort_key"]

_MAX_KEY_CHARS = 4000
_KEY_TYPES = frozenset({RecordType.KEY})


def _priority(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"key memory priority must be an integer, got {value!r}")
    return check_int(value, "key memory priority", low=-(2**31), high=2**31)


@checked_calls
class AsyncKeyMemoryService:
    def __init__(self, ctx: AsyncLayerContext) -> None:
        self._ctx = ctx

    @staticmethod
    def _scope(scope: Scope) -> Scope:
        return check_scope(scope).with_session(None)

    def _record(
        self,
        scope: Scope,
        text: str,
        *,
        origin: str,
        priority: int,
        source: Source,
        source_ids: Sequence[str] = (),
        extra: dict[str, object] | None = None,
        observed_at: datetime | None = None,
    ) -> MemoryRecord:
        now = self._ctx.clock.now()
        vis = Visibility.PRIVATE if scope.agent else Visibility.SHARED
        return MemoryRecord(
            id=new_id(),
            tenant=scope.tenant,
            user=scope.user,
            agent=scope.agent,
            session=None,
            type=RecordType.KEY,
            content=Content(text),
            created_at=now,
            updated_at=now,
            observed_at=observed_at or now,
            embedding_model=self._ctx.embedder.model_id,
            embedding_dims=self._ctx.embedder.dims,
            importance=1.0 if origin == ORIGIN_USER else 0.8,
            source=source,
            access=AccessControl(visibility=vis),
            source_ids=tuple(source_ids),
            metadata={"origin": origin, "priority": priority, **(extra or {})},
            content_hash=content_hash(text),
        )

    async def set(self, scope: Scope, text: str, priority: int = 0) -> MemoryRecord:
        """Pin an entry the user chose (``source=explicit_user_input``)."""
        check_owner(scope)
        body = validate_content(text, max_chars=_MAX_KEY_CHARS)
        record = self._record(
            self._scope(scope),
            body,
            origin=ORIGIN_USER,
            priority=_priority(priority),
            source=Source.EXPLICIT_USER_INPUT,
        )
        async with self._ctx.admit(scope, 1):
            stored = await self._ctx.insert([record])
        return stored[0]

    async def get(self, scope: Scope, record_id: str) -> MemoryRecord:
        check_scope(scope)
        check_id(record_id)
        record = await self._ctx.store.get(self._scope(scope), record_id)
        if record.type is not RecordType.KEY:
            raise NotFoundError(f"no key memory entry {record_id!r} in {scope}")
        return record

    async def edit(
        self,
        scope: Scope,
        record_id: str,
        *,
        expected_version: int,
        text: str | None = None,
        priority: int | None = None,
    ) -> MemoryRecord:
        """A new version of an entry; ``ConflictError`` if ``expected_version`` is stale."""
        check_owner(scope)
        check_int(expected_version, "expected_version", low=1, high=MAX_COUNT)
        if text is None and priority is None:
            # as update() and the HTTP API's PATCH of a memory: it wrote an equal version
            raise ValidationError("nothing to change: pass text or priority (or both)")
        if priority is not None:
            _priority(priority)
        current = await self.get(scope, record_id)
        check_read_version(current.id, current.version, expected_version)
        changes: dict[str, object] = {
            "version": expected_version + 1,
            "updated_at": self._ctx.clock.now(),
        }
        if text is not None:
            body = validate_content(text, max_chars=_MAX_KEY_CHARS)
            changes["content"] = replace(current.content, raw=body)
            changes["content_hash"] = content_hash(body)
        if priority is not None:
            changes["metadata"] = {**current.metadata, "priority": _priority(priority)}
        new = replace(current, **changes)  # type: ignore[arg-type]
        return await self._ctx.replace(
            self._scope(scope), new, expected_version=expected_version, reindex=text is not None
        )

    async def remove(self, scope: Scope, record_id: str) -> None:
        """Soft delete (restorable until purged)."""
        check_owner(scope)
        await self.get(scope, record_id)
        await self._ctx.store.set_status(
            self._scope(scope), [record_id], RecordStatus.DELETED, self._ctx.clock.now()
        )

    async def list(self, scope: Scope) -> builtins.list[MemoryRecord]:
        """Active entries: user-set first, then by priority (high first), then newest."""
        q = self.list_query(check_scope(scope))
        return key_order(await self._ctx.store.list(q.scope, q.filters, limit=q.limit))

    def list_query(self, scope: Scope) -> ListQuery:
        """The store read behind :meth:`list` (its records go through :func:`key_order`), for
        a caller that folds it with other reads (``Store.list_many``)."""
        return ListQuery(self._scope(scope), Filters(types=_KEY_TYPES), limit=1000)

    async def promote(self, scope: Scope, cluster: MemoryRecord) -> MemoryRecord:
        """Pin a hot mid-term cluster (``origin="auto"``); promoting the same cluster again
        returns the entry made the first time. A deleted or missing cluster is refused."""
        kscope = self._scope(check_owner(scope))
        if not isinstance(cluster, MemoryRecord):
            raise ValidationError(
                f"cluster must be a cluster MemoryRecord (from mem.list or mem.search), got "
                f"{type(cluster).__name__}"
            )
        if cluster.type is not RecordType.CLUSTER:
            raise ValidationError(f"only cluster records can be promoted, got {cluster.type}")
        current = await self._ctx.store.get(kscope, cluster.id, include_deleted=True)
        if current.type is not RecordType.CLUSTER:
            raise ValidationError(f"record {cluster.id!r} is not a cluster")
        if not current.is_active:
            raise ValidationError(
                f"cluster {cluster.id!r} is deleted; restore it before promoting it"
            )
        existing = await self._ctx.store.list(
            kscope,
            Filters(
                types=_KEY_TYPES, metadata=(MetadataCondition("cluster_id", "eq", cluster.id),)
            ),
            limit=1,
        )
        if existing:
            return existing[0]
        text = await self._key_text(current)
        record = self._record(
            kscope,
            text,
            origin=ORIGIN_AUTO,
            priority=0,
            source=Source.SYSTEM_GENERATED,
            source_ids=current.source_ids,
            extra={"cluster_id": current.id},
            observed_at=current.observed_at,
        )
        async with self._ctx.admit(kscope, 1):  # nothing to admit for mid-term's promotions
            stored = await self._ctx.insert([record])
        return stored[0]

    async def _key_text(self, cluster: MemoryRecord) -> str:
        """The cluster's key information via the LLM; the offline extractor if it fails."""
        members = [
            m.text
            for m in await self._ctx.store.get_many(
                self._scope(cluster.scope), list(cluster.source_ids)[-50:]
            )
            if m.is_active
        ]
        lines: builtins.list[str] = []
        if members:
            try:
                lines = [
                    s.strip() for s in await self._ctx.llm.extract_key_info(members) if s.strip()
                ]
            except Exception:  # any provider failure: degrade to the offline extractor
                lines = []
            if not lines:
                lines = [s.strip() for s in HeuristicLLM().extract_key_info(members) if s.strip()]
        text = "; ".join(lines) if lines else cluster.text
        return text[:_MAX_KEY_CHARS]
