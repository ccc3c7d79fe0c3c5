"""The audit log's values: one class for ``memstrata.audit`` and ``memstrata._async.audit``
(and the stores that keep events)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from .errors import NotFoundError, ValidationError
from .validation import check_time

__all__ = [
    "PURGED",
    "AuditEvent",
    "AuditQuery",
    "event_of_row",
    "names_user",
    "redacted_event",
    "row_of_event",
    "unknown_event",
    "without_actor",
    "without_reader",
]

_MAX_LIMIT = 100_000
_MAX_OFFSET = 2**62  # as list()'s offset bound


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
    after: str | None = None  # an event id: only events after it in the log's order

    def __post_init__(self) -> None:
        for name in ("user", "action", "actor", "record_id", "after"):
            v = getattr(self, name)
            # a NUL was no match on SQLite and a StoreError on PostgreSQL (no text parameter
            # holds one), a lone surrogate a UnicodeEncodeError, an int a misleading
            # "schema is not what this memstrata expects"
            if v is not None and (not isinstance(v, str) or "\x00" in v):
                raise ValidationError(
                    f"audit query {name} must be a string without NUL characters, got {v!r}"
                )
            try:
                v is None or v.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ValidationError(
                    f"audit query {name} contains a lone surrogate at position {exc.start}, "
                    "which is not valid UTF-8: fix the decoding that produced it"
                ) from None
        if self.after is not None:
            if not isinstance(self.after, str) or not self.after:
                raise ValidationError(
                    f"audit query after must be an event id (a non-empty string), "
                    f"got {self.after!r}"
                )
            if self.offset:
                raise ValidationError(
                    "audit query after and offset cannot be combined: page with after "
                    "(the last event id of the previous page) alone"
                )
        for name in ("limit", "offset"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < (1 if name == "limit" else 0):
                raise ValidationError(
                    f"audit query {name} must be an integer >= "
                    f"{1 if name == 'limit' else 0}, got {v!r}"
                )
        if self.limit > _MAX_LIMIT:
            raise ValidationError(f"audit query limit must be <= {_MAX_LIMIT}; page with after")
        if self.offset > _MAX_OFFSET:  # past what a store's integer holds: a raw OverflowError
            raise ValidationError(f"audit query offset must be <= {_MAX_OFFSET}; page with after")
        for name in ("since", "until"):
            v = getattr(self, name)
            if v is not None:  # as every time parameter: a datetime, a date, ISO-8601
                object.__setattr__(self, name, check_time(v, f"audit query {name}"))

    def matches(self, e: AuditEvent) -> bool:
        return (
            (self.user is None or e.user == self.user)
            and (self.action is None or e.action == self.action)
            and (self.actor is None or e.actor == self.actor)
            and (self.record_id is None or self.record_id in e.record_ids)
            and (self.since is None or e.at >= self.since)
            and (self.until is None or e.at < self.until)
        )


def row_of_event(e: AuditEvent, *, json_ids: bool) -> tuple[Any, ...]:
    """``e`` as a row of a store's ``audit_log`` table, in its columns' order (id, tenant,
    user, actor, action, at, record_ids, reason, policy, score, details): ``record_ids`` a
    JSON text where ``json_ids`` (SQLite), else a list (a PostgreSQL array)."""
    return (
        e.id,
        e.tenant,
        e.user,
        e.actor,
        e.action,
        e.at.isoformat(),
        json.dumps(list(e.record_ids)) if json_ids else list(e.record_ids),
        e.reason,
        e.policy,
        e.score,
        json.dumps(dict(e.details), ensure_ascii=False, default=str),
    )


def event_of_row(row: Sequence[Any], *, json_ids: bool) -> AuditEvent:
    """The event an ``audit_log`` row holds (its 11 columns in :func:`row_of_event`'s
    order); ``json_ids`` as there."""
    (rid, tenant, user, actor, action, at, record_ids, reason, policy, score, details) = row
    return AuditEvent(
        id=rid,
        tenant=tenant,
        user=user,
        actor=actor,
        action=action,
        at=datetime.fromisoformat(at),
        record_ids=tuple(json.loads(record_ids) if json_ids else record_ids),
        reason=reason,
        policy=policy,
        score=score,
        details=json.loads(details),
    )


def unknown_event(tenant: str, event_id: str) -> NotFoundError:
    """What ``AuditQuery.after`` naming no event of the tenant raises (another tenant's id
    gets the same answer as a missing one)."""
    return NotFoundError(f"audit event {event_id!r} not found in tenant {tenant!r}")


PURGED = "[purged]"


def names_user(actor: str, user: str) -> bool:
    """Whether ``actor`` (free text a caller gave) names the user ``user`` on their own
    events: it holds their id as a word, not run into a letter, a digit or ``_`` on either
    side — ``ann``, ``user:ann``, ``ann (admin)``, ``ann-bot`` and ``ann.lee@example.com``
    name ``ann``; ``joanna`` and ``anna`` name someone else. In doubt (``ann-bot``: ann's
    bot, or another's?) the purge's promise wins: the actor is dropped. Other users' events
    go by :func:`without_actor`'s exact rule (found by an index of actors)."""
    start = actor.find(user) if user else -1
    while start >= 0:
        end = start + len(user)
        if not _joins(actor[start - 1 : start]) and not _joins(actor[end : end + 1]):
            return True
        start = actor.find(user, start + 1)
    return False


def _joins(c: str) -> bool:
    """Whether ``c`` (one character, or none at an end) continues a word."""
    return c != "" and (c.isalnum() or c == "_")


def redacted_event(e: AuditEvent, user: str) -> AuditEvent:
    """One of ``user``'s own events after their whole-user purge: what, when and why are
    kept, which user and which ids are not; the actor is :data:`PURGED` when it names the
    user (:func:`names_user`: ``user:ann`` does, ``joanna`` does not; until session 30 any
    actor containing the id was lost)."""
    actor = PURGED if names_user(e.actor, user) else e.actor
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


def without_reader(e: AuditEvent, user: str) -> AuditEvent:
    """Another user's ``set_access`` event with ``user`` taken out of the readers it
    lists (a whole-user purge of ``user``); any other event is returned as it is."""
    readers = e.details.get("allowed_users") if e.action == "set_access" else None
    if not isinstance(readers, list) or user not in readers:
        return e
    details = {**e.details, "allowed_users": [u for u in readers if u != user]}
    return replace(e, details=details)


def without_actor(e: AuditEvent, user: str) -> AuditEvent:
    """Another user's event (or one of no user) whose actor is ``user`` (exactly: the actor
    is free text, and ``system:maintenance`` names the system, not a user called
    ``maintenance``) with :data:`PURGED` as its actor (a whole-user purge of ``user``); the
    rest of the event is kept. Any other event is returned as it is."""
    return replace(e, actor=PURGED) if e.actor == user else e
