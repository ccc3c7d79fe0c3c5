"""The audit log: append-only, per tenant, never deleted by retention (seed 002 §8.10).

An :class:`AuditEvent` says who (tenant, actor: an API key id, a user, ``system:...``),
what (action), which record ids, when, and why (policy and score for automatic actions, a
reason otherwise). Events are written through the small :class:`AuditStore` protocol, so any
backend can keep them: SQLite keeps them in the ``audit_log`` table (migration 2, with
triggers that refuse UPDATE and DELETE), the in-memory store in a list, and PostgreSQL can
implement the same two methods.

``Memory.audit`` (an :class:`AuditLog`) records what ``maintain``, ``forget``, ``delete``,
``restore``, ``purge`` and ``set_importance_by_tag`` did, and answers ``query`` and
``export`` (JSON Lines) per tenant.
"""

from __future__ import annotations

import json
import logging
import math
import sqlite3
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any, Protocol, runtime_checkable

from .clock import Clock, ensure_utc
from .errors import StoreError, ValidationError
from .records import new_id

if TYPE_CHECKING:  # only annotated here; importing it costs every CLI call ~30 ms
    from .policies.pii import PIIRedactor

__all__ = [
    "AuditEvent",
    "AuditLog",
    "AuditQuery",
    "AuditStore",
    "InMemoryAudit",
    "SQLiteAudit",
    "audit_store",
    "sqlite_redact_subject",
]

_MAX_LIMIT = 100_000
log = logging.getLogger("memstrata.audit")


@dataclass(frozen=True, slots=True)
class AuditEvent:
    id: str
    tenant: str
    actor: str
    action: str
    at: datetime
    user: str | None = None
    record_ids: tuple[str, ...] = ()
    reason: str | None = None
    policy: str | None = None
    score: float | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tenant": self.tenant,
            "user": self.user,
            "actor": self.actor,
            "action": self.action,
            "at": self.at.isoformat(),
            "record_ids": list(self.record_ids),
            "reason": self.reason,
            "policy": self.policy,
            "score": self.score,
            "details": dict(self.details),
        }


@dataclass(frozen=True, slots=True)
class AuditQuery:
    """Filters of :meth:`AuditStore.query_audit` (all optional; oldest first)."""

    user: str | None = None
    action: str | None = None
    actor: str | None = None
    record_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int = 1000
    offset: int = 0

    def __post_init__(self) -> None:
        for name in ("limit", "offset"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < (1 if name == "limit" else 0):
                raise ValidationError(
                    f"audit query {name} must be an integer >= "
                    f"{1 if name == 'limit' else 0}, got {v!r}"
                )
        if self.limit > _MAX_LIMIT:
            raise ValidationError(f"audit query limit must be <= {_MAX_LIMIT}; page with offset")
        for name in ("since", "until"):
            v = getattr(self, name)
            if v is not None:
                if not isinstance(v, datetime):
                    raise ValidationError(f"audit query {name} must be a datetime")
                object.__setattr__(self, name, ensure_utc(v))

    def matches(self, e: AuditEvent) -> bool:
        return (
            (self.user is None or e.user == self.user)
            and (self.action is None or e.action == self.action)
            and (self.actor is None or e.actor == self.actor)
            and (self.record_id is None or self.record_id in e.record_ids)
            and (self.since is None or e.at >= self.since)
            and (self.until is None or e.at < self.until)
        )


@runtime_checkable
class AuditStore(Protocol):
    """What a backend implements to keep the audit log (append and read, nothing else)."""

    def append_audit(self, events: Sequence[AuditEvent]) -> None: ...

    def query_audit(self, tenant: str, query: AuditQuery) -> list[AuditEvent]: ...

    def redact_subject(self, tenant: str, user: str) -> int:
        """A user's purge: keep their events (what, when, why) but drop who and which ids
        (``user`` → None, ``record_ids`` → (), ``reason`` → "[purged]", ``details`` → {},
        an actor naming them → "[purged]"). Returns how many events were redacted."""
        ...


PURGED = "[purged]"


def _redacted(e: AuditEvent, user: str) -> AuditEvent:
    actor = PURGED if user in e.actor else e.actor
    return AuditEvent(
        id=e.id,
        tenant=e.tenant,
        actor=actor,
        action=e.action,
        at=e.at,
        user=None,
        record_ids=(),
        reason=PURGED,
        policy=e.policy,
        score=e.score,
        details={},
    )


class InMemoryAudit:
    """The audit log of a ``memory://`` store: a list, gone with the process."""

    def __init__(self) -> None:
        self._events: list[AuditEvent] = []
        self._lock = threading.Lock()

    def append_audit(self, events: Sequence[AuditEvent]) -> None:
        with self._lock:
            self._events.extend(events)

    def query_audit(self, tenant: str, query: AuditQuery) -> list[AuditEvent]:
        with self._lock:
            found = [e for e in self._events if e.tenant == tenant and query.matches(e)]
        return found[query.offset : query.offset + query.limit]

    def redact_subject(self, tenant: str, user: str) -> int:
        with self._lock:
            hits = [i for i, e in enumerate(self._events) if e.tenant == tenant and e.user == user]
            for i in hits:
                self._events[i] = _redacted(self._events[i], user)
        return len(hits)


def sqlite_redact_subject(conn: sqlite3.Connection, tenant: str, user: str) -> int:
    """The SQLite redaction, inside the caller's transaction (the store's purge). The
    table's trigger lets exactly this update through and refuses every other."""
    cur = conn.execute(
        "UPDATE audit_log SET user = NULL, record_ids = '[]', reason = ?1, details = '{}', "
        "actor = CASE WHEN instr(actor, ?3) > 0 THEN ?1 ELSE actor END "
        "WHERE tenant = ?2 AND user = ?3",
        (PURGED, tenant, user),
    )
    return int(cur.rowcount)


_COLUMNS = "id, tenant, user, actor, action, at, record_ids, reason, policy, score, details"


class SQLiteAudit:
    """The ``audit_log`` table of a SQLite store, written in the store's own transactions."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def append_audit(self, events: Sequence[AuditEvent]) -> None:
        rows = [
            (
                e.id,
                e.tenant,
                e.user,
                e.actor,
                e.action,
                e.at.isoformat(),
                json.dumps(list(e.record_ids)),
                e.reason,
                e.policy,
                e.score,
                json.dumps(dict(e.details), ensure_ascii=False, default=str),
            )
            for e in events
        ]
        with self._store._write() as c:
            c.executemany(
                f"INSERT INTO audit_log ({_COLUMNS}) VALUES ({', '.join('?' * 11)})", rows
            )

    def query_audit(self, tenant: str, query: AuditQuery) -> list[AuditEvent]:
        sql = f"SELECT {_COLUMNS} FROM audit_log WHERE tenant = ?"
        args: list[Any] = [tenant]
        for column, value in (
            ("user", query.user),
            ("action", query.action),
            ("actor", query.actor),
        ):
            if value is not None:
                sql += f" AND {column} = ?"
                args.append(value)
        if query.record_id is not None:
            sql += " AND EXISTS (SELECT 1 FROM json_each(record_ids) WHERE value = ?)"
            args.append(query.record_id)
        if query.since is not None:
            sql += " AND at >= ?"
            args.append(query.since.isoformat())
        if query.until is not None:
            sql += " AND at < ?"
            args.append(query.until.isoformat())
        sql += " ORDER BY at, seq LIMIT ? OFFSET ?"
        args += [query.limit, query.offset]
        with self._store._read() as c:
            rows = c.execute(sql, args).fetchall()
        return [_decode(r) for r in rows]

    def redact_subject(self, tenant: str, user: str) -> int:
        with self._store._write() as c:
            return sqlite_redact_subject(c, tenant, user)


def _decode(r: sqlite3.Row | tuple[Any, ...]) -> AuditEvent:
    (rid, tenant, user, actor, action, at, record_ids, reason, policy, score, details) = tuple(r)
    return AuditEvent(
        id=rid,
        tenant=tenant,
        user=user,
        actor=actor,
        action=action,
        at=datetime.fromisoformat(at),
        record_ids=tuple(json.loads(record_ids)),
        reason=reason,
        policy=policy,
        score=score,
        details=json.loads(details),
    )


_IN_MEMORY: weakref.WeakKeyDictionary[object, InMemoryAudit] = weakref.WeakKeyDictionary()
_IN_MEMORY_LOCK = threading.Lock()


def audit_store(store: object) -> AuditStore:
    """The audit backend of ``store``: the store itself when it implements
    :class:`AuditStore` (e.g. PostgreSQL), else the adapter for the built-in stores."""
    if isinstance(store, AuditStore):
        return store
    from .store.memory import InMemoryStore
    from .store.sqlite import SQLiteStore

    if isinstance(store, SQLiteStore):
        return SQLiteAudit(store)
    if not isinstance(store, InMemoryStore):
        # A backend without its own audit table (PostgreSQL today): keep the events in
        # process memory and say so, rather than refusing to open the store.
        log.warning(
            "%s keeps no audit log: events are kept in process memory only; "
            "implement memstrata.audit.AuditStore on it to persist them",
            type(store).__name__,
        )
    with _IN_MEMORY_LOCK:
        try:
            return _IN_MEMORY.setdefault(store, InMemoryAudit())
        except TypeError:  # not weak-referenceable
            raise StoreError(
                f"{type(store).__name__} keeps no audit log: implement "
                "memstrata.audit.AuditStore on it"
            ) from None


def _text(value: object, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"audit {name} must be a non-empty string, got {value!r}")
    return value


class AuditLog:
    """What ``Memory.audit`` is: record, query and export events per tenant."""

    def __init__(self, backend: AuditStore, clock: Clock, pii: PIIRedactor | None = None) -> None:
        self._backend = backend
        self._clock = clock
        self._pii = pii  # reasons and details are user text: redacted like records

    def record(
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
        self._backend.append_audit([event])
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
        tenant = _text(tenant, "tenant")
        details = dict(details or {})
        if self._pii is not None:
            reason = None if reason is None else self._pii.redact_value(tenant, reason)
            details = self._pii.redact_value(tenant, details)
        return AuditEvent(
            id=new_id(),
            tenant=tenant,
            actor=_text(actor, "actor"),
            action=_text(action, "action"),
            at=at or self._clock.now(),
            user=user,
            record_ids=tuple(str(i) for i in record_ids),
            reason=reason,
            policy=policy,
            score=None if score is None else float(score),
            details=details,
        )

    def redact_subject(self, tenant: str, user: str) -> int:
        return self._backend.redact_subject(tenant, user)

    def append(self, events: Sequence[AuditEvent]) -> None:
        if events:
            self._backend.append_audit(events)

    def query(self, tenant: str, **filters: Any) -> list[AuditEvent]:
        """Events of ``tenant``, oldest first; filters: user, action, actor, record_id,
        since, until, limit, offset."""
        try:
            q = AuditQuery(**filters)
        except TypeError as exc:
            raise ValidationError(f"unknown audit filter: {exc}") from None
        return self._backend.query_audit(_text(tenant, "tenant"), q)

    def iter_all(self, tenant: str, **filters: Any) -> Iterator[AuditEvent]:
        offset = 0
        while batch := self.query(tenant, **filters, limit=1000, offset=offset):
            yield from batch
            offset += len(batch)

    def export(self, tenant: str, fp: IO[str], **filters: Any) -> int:
        """Write the tenant's events as JSON Lines; returns how many."""
        n = 0
        for event in self.iter_all(tenant, **filters):
            fp.write(json.dumps(event.as_dict(), ensure_ascii=False) + "\n")
            n += 1
        return n
