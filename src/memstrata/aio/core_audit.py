"""The audit backend of an async store (``AsyncMemory.audit``'s backend).

A store that keeps the audit log natively and asynchronously (PostgreSQL through psycopg's
async API) is used as it is. A store presented as async over a sync one (SQLite and
``memory://`` through the thread adapter, which exposes the sync store as ``sync``)
keeps its events where the sync :func:`memstrata.audit.audit_store` keeps them, reached
through a worker thread, so sync and async memories on one store share one audit log.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Sequence

from .._async.audit import AsyncAuditStore
from ..audit import AuditStore
from ..audit import audit_store as sync_audit_store
from ..audit_types import AuditEvent, AuditQuery

__all__ = ["AsyncThreadAudit", "audit_store"]


class AsyncThreadAudit:
    """A sync :class:`~memstrata.audit.AuditStore` awaited through a worker thread."""

    def __init__(self, backend: AuditStore) -> None:
        self._backend = backend
        # the sync backend's: its events are rows the store's unit of work can append
        self.audit_in_transactions = bool(getattr(backend, "audit_in_transactions", False))

    async def append_audit(self, events: Sequence[AuditEvent]) -> None:
        await asyncio.to_thread(self._backend.append_audit, events)

    async def query_audit(self, tenant: str, query: AuditQuery) -> list[AuditEvent]:
        return await asyncio.to_thread(self._backend.query_audit, tenant, query)

    async def redact_subject(self, tenant: str, user: str) -> int:
        return await asyncio.to_thread(self._backend.redact_subject, tenant, user)


def audit_store(store: object) -> AsyncAuditStore:
    """The async audit backend of ``store`` (see the module docstring)."""
    if isinstance(store, AsyncAuditStore) and inspect.iscoroutinefunction(store.append_audit):
        return store
    sync = getattr(store, "sync", None)
    return AsyncThreadAudit(sync_audit_store(sync if sync is not None else store))
