"""The audit log: append-only, per tenant, never deleted by retention (seed 002 §8.10).

An :class:`AuditEvent` says who (tenant, actor: an API key id, a user, ``system:...``),
what (action), which record ids, when, and why (policy and score for automatic actions, a
reason otherwise). Events are written through the small :class:`AuditStore` protocol, so any
backend can keep them: SQLite keeps them in the ``audit_log`` table (migration 2, with
triggers that refuse UPDATE and DELETE), the in-memory store in a list, and PostgreSQL can
implement the same two methods.

``Memory.audit`` (an :class:`AuditLog`) records what ``maintain``, ``forget``, ``delete``,
``restore``, ``purge``, ``set_access`` and ``set_importance_by_tag`` did, and answers
``query`` and ``export`` (JSON Lines) per tenant.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from memstrata.audit_types import PURGED, AuditEvent, AuditQuery
from memstrata.calls import checked_calls
from memstrata.clock import Clock
from memstrata.errors import ValidationError, export_write_failed
from memstrata.records import new_id
from memstrata.validation import check_id, check_ids, check_text_sink

# sync: from memstrata.audit_backends import InMemoryAudit, SQLiteAudit, audit_store
# sync: from memstrata.audit_backends import sqlite_redact_subject

if TYPE_CHECKING:  # only annotated here; importing it costs every CLI call ~30 ms
    from memstrata.policies.pii import PIIRedactor

__all__ = [
    "PURGED",
    "AsyncAuditLog",
    "AsyncAuditStore",
    "AuditEvent",
    "AuditQuery",
    # sync: "InMemoryAudit",
    # sync: "SQLiteAudit",
    # sync: "audit_store",
    # sync: "sqlite_redact_subject",
]


@runtime_checkable
class AsyncAuditStore(Protocol):
    """What a backend implements to keep the audit log (append and read, nothing else)."""

    async def append_audit(self, events: Sequence[AuditEvent]) -> None: ...

    async def query_audit(self, tenant: str, query: AuditQuery) -> list[AuditEvent]: ...

    async def redact_subject(self, tenant: str, user: str) -> int:
        """A user's purge: keep their events (what, when, why) but drop who and which ids
        (``user`` → None, ``record_ids`` → (), ``reason`` → "[purged]", ``details`` → {},
        an actor naming them → "[purged]"), and take them out of the readers other users'
        ``set_access`` events list (``details["allowed_users"]``; those events stay).
        Returns how many events were redacted."""
        ...


class _AuditUnit(Protocol):
    """A unit of work of a store that keeps the audit log (SQLite, PostgreSQL)."""

    async def append_audit(self, events: Sequence[AuditEvent]) -> None: ...


def _text(value: object, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"audit {name} must be a non-empty string, got {value!r}")
    return value


@checked_calls
class AsyncAuditLog:
    """What ``Memory.audit`` is: record, query and export events per tenant."""

    def __init__(
        self, backend: AsyncAuditStore, clock: Clock, pii: PIIRedactor | None = None
    ) -> None:
        self._backend = backend
        self._clock = clock
        self._pii = pii  # reasons and details are user text: redacted like records

    async def record(
        self,
        tenant: str,
        actor: str,
        action: str,
        *,
        user: str | None = None,
        record_ids: Sequence[str] = (),
        reason: str | None = None,
        policy: str | None = None,
        score: float | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> AuditEvent:
        event = self.event(
            tenant,
            actor,
            action,
            user=user,
            record_ids=record_ids,
            reason=reason,
            policy=policy,
            score=score,
            details=details,
        )
        await self._backend.append_audit([event])
        return event

    def event(
        self,
        tenant: str,
        actor: str,
        action: str,
        *,
        user: str | None = None,
        record_ids: Sequence[str] = (),
        reason: str | None = None,
        policy: str | None = None,
        score: float | None = None,
        details: Mapping[str, Any] | None = None,
        at: datetime | None = None,
    ) -> AuditEvent:
        if score is not None and (
            isinstance(score, bool)
            or not isinstance(score, int | float)
            or not math.isfinite(score)
        ):
            raise ValidationError(f"audit score must be a finite number, got {score!r}")
        # ids, as a scope's: PostgreSQL's indexes of the log hold tenant with actor, user or
        # record ids (an actor of 9,000 characters was refused there, stored elsewhere)
        tenant = check_id(_text(tenant, "tenant"), "tenant")
        actor = check_id(_text(actor, "actor"), "actor")
        user = None if user is None else check_id(user, "user")
        record_ids = check_ids(tuple(str(i) for i in record_ids), "record_ids")
        details = dict(details or {})
        if self._pii is not None:
            reason = None if reason is None else self._pii.redact_value(tenant, reason)
            details = self._pii.redact_value(tenant, details)
        return AuditEvent(
            id=new_id(),
            tenant=tenant,
            actor=actor,
            action=_text(action, "action"),
            at=at or self._clock.now(),
            user=user,
            record_ids=record_ids,
            reason=reason,
            policy=policy,
            score=None if score is None else float(score),
            details=details,
        )

    async def redact_subject(self, tenant: str, user: str) -> int:
        return await self._backend.redact_subject(tenant, user)

    async def append(self, events: Sequence[AuditEvent]) -> None:
        if events:
            await self._backend.append_audit(events)

    @property
    def in_transactions(self) -> bool:
        """Whether a unit of work of the store can append events in its transaction
        (:meth:`append_in`): the log is a table of the store's own database (SQLite,
        PostgreSQL; behind Redis too), or ``memory://``'s own list, which its unit of work
        appends to with its writes; not the fallback list of a store without a log."""
        return bool(getattr(self._backend, "audit_in_transactions", False))

    async def ahead(self, events: Sequence[AuditEvent]) -> list[AuditEvent]:
        """The events of writes about to be made in one unit of work, recorded before or
        with them: where the log is a table of the store (:attr:`in_transactions`) they are
        returned, for :meth:`append_in` in that transaction (they commit or roll back with
        the writes; ``memory://`` too, since session 27); else (a store without a log of
        its own) they are appended now, before the writes, and nothing is returned."""
        if self.in_transactions:
            return list(events)
        await self.append(events)
        return []

    async def append_in(self, tx: object, events: Sequence[AuditEvent]) -> None:
        """Append ``events`` in the open transaction ``tx`` (a unit of work of the store
        this log is kept in, :attr:`in_transactions`): they commit or roll back with the
        writes they record. No events: nothing to do, on any store."""
        if not events:
            return
        if not self.in_transactions:
            raise ValidationError(
                "this audit log is not kept in the store's database: append its events "
                "with append(), before the writes they record"
            )
        await cast(_AuditUnit, tx).append_audit(events)

    async def query(self, tenant: str, **filters: Any) -> list[AuditEvent]:
        """Events of ``tenant``, oldest first (by time, then by append); filters: user,
        action, actor, record_id, since, until, limit, and offset or after (an event id:
        the events after it, so pages stay right while events are appended or redacted)."""
        try:
            q = AuditQuery(**filters)
        except TypeError as exc:
            raise ValidationError(f"unknown audit filter: {exc}") from None
        return await self._backend.query_audit(_text(tenant, "tenant"), q)

    async def iter_all(self, tenant: str, **filters: Any) -> AsyncIterator[AuditEvent]:
        """Every event matching ``filters``, in pages after the last event read (keyset:
        an event appended meanwhile with an earlier time cannot repeat one, a redaction
        that takes events out of the filter cannot skip one)."""
        for name in ("limit", "offset", "after"):
            if name in filters:
                raise ValidationError(f"audit iter_all pages by itself: drop {name!r}")
        after = None
        while batch := await self.query(tenant, **filters, limit=1000, after=after):
            for event in batch:  # async-only
                yield event  # async-only
            # sync: yield from batch
            after = batch[-1].id

    async def export(self, tenant: str, fp: IO[str], **filters: Any) -> int:
        """Write the tenant's events as JSON Lines; returns how many."""
        check_text_sink(fp)
        n = 0
        async for event in self.iter_all(tenant, **filters):
            try:
                fp.write(json.dumps(event.as_dict(), ensure_ascii=False) + "\n")
            except (OSError, ValueError) as exc:  # the caller's file: full, closed ...
                raise export_write_failed(exc, n, "events") from exc
            n += 1
        return n
