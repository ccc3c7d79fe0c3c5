"""The records memstrata stores: messages, memory records and their parts.

Records are frozen: a change is a new version made with :func:`dataclasses.replace`, and the
store keeps the old one in the record's history.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from .errors import ValidationError
from .scope import Scope
from .validation import check_enum, check_names, check_unit, check_version

__all__ = [
    "AccessControl",
    "Content",
    "Message",
    "MemoryRecord",
    "RecordStatus",
    "RecordType",
    "Relation",
    "Role",
    "Source",
    "Visibility",
    "caller_view",
    "new_id",
    "references",
]

JSON = Any


class RecordType(StrEnum):
    MESSAGE = "message"
    SUMMARY = "summary"
    EPISODE = "episode"
    FACT = "fact"
    KNOWLEDGE = "knowledge"
    CLUSTER = "cluster"
    KEY = "key"
    PROCEDURE = "procedure"
    TASK = "task"  # working memory: the current task's state
    NOTE = "note"


class Source(StrEnum):
    EXPLICIT_USER_INPUT = "explicit_user_input"
    IMPLICIT_INFERENCE = "implicit_inference"
    SYSTEM_GENERATED = "system_generated"
    EXTERNAL_DATA = "external_data"
    CORRECTED_MEMORY = "corrected_memory"


class Visibility(StrEnum):
    """Seed 003's record ``scope``: who besides the writing agent may read it."""

    PRIVATE = "private"
    SHARED = "shared"
    PUBLIC = "public"


class RecordStatus(StrEnum):
    ACTIVE = "active"
    DELETED = "deleted"


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


def new_id() -> str:
    return uuid.uuid4().hex


def _enum(kind: type[StrEnum], value: object, name: str) -> Any:
    return check_enum(kind, value, name)


def _unit(value: object, name: str) -> float:
    return check_unit(value, name)


def _strings(value: object, name: str) -> tuple[str, ...]:
    if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
        return value
    if isinstance(value, str):
        raise ValidationError(f"{name} must be a list of strings, not one string")
    return check_names(value, name)


@dataclass(frozen=True, slots=True)
class Message:
    """One conversational turn as the caller hands it over."""

    role: Role
    content: str
    observed_at: datetime | None = None
    metadata: Mapping[str, JSON] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "role", _enum(Role, self.role, "role"))


@dataclass(frozen=True, slots=True)
class Content:
    """The three faces of a record's content (seed 003): raw text, summary, structure."""

    raw: str
    summary: str | None = None
    structured: Mapping[str, JSON] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The text that is embedded, indexed and shown."""
        return self.raw


@dataclass(frozen=True, slots=True)
class AccessControl:
    visibility: Visibility = Visibility.PRIVATE
    allowed_users: tuple[str, ...] = ()
    allowed_roles: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "visibility", _enum(Visibility, self.visibility, "visibility"))


@dataclass(frozen=True, slots=True)
class Relation:
    kind: str
    target_id: str


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One unit of memory, in any layer (DESIGN §1, seed 003's schema).

    ``source_ids`` names what a derived record was made from (messages or other records);
    a message lists itself, so provenance always bottoms out in messages.
    """

    id: str
    tenant: str
    user: str
    type: RecordType
    content: Content
    created_at: datetime
    updated_at: datetime
    observed_at: datetime
    agent: str | None = None
    session: str | None = None
    role: Role | None = None
    embedding_model: str | None = None
    embedding_dims: int | None = None
    importance: float = 0.5
    confidence: float = 1.0
    tags: tuple[str, ...] = ()
    source: Source = Source.EXPLICIT_USER_INPUT
    version: int = 1
    last_accessed_at: datetime | None = None
    access_count: int = 0
    decay_score: float = 1.0
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    superseded_by: str | None = None
    relations: tuple[Relation, ...] = ()
    access: AccessControl = field(default_factory=AccessControl)
    source_ids: tuple[str, ...] = ()
    metadata: Mapping[str, JSON] = field(default_factory=dict)
    content_hash: str = ""
    status: RecordStatus = RecordStatus.ACTIVE
    deleted_at: datetime | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "type", _enum(RecordType, self.type, "type"))
        object.__setattr__(self, "source", _enum(Source, self.source, "source"))
        object.__setattr__(self, "status", _enum(RecordStatus, self.status, "status"))
        if self.role is not None:
            object.__setattr__(self, "role", _enum(Role, self.role, "role"))
        _unit(self.importance, "importance")
        _unit(self.confidence, "confidence")
        check_version(self.id, self.version)
        object.__setattr__(self, "tags", _strings(self.tags, "tags"))
        object.__setattr__(self, "source_ids", _strings(self.source_ids, "source_ids"))

    @property
    def scope(self) -> Scope:
        return Scope(self.tenant, self.user, self.agent, self.session)

    @property
    def text(self) -> str:
        return self.content.raw

    @property
    def is_active(self) -> bool:
        return self.status is RecordStatus.ACTIVE

    def visible_in(self, scope: Scope) -> bool:
        return scope.admits(
            self.tenant,
            self.user,
            self.agent,
            self.session,
            self.access.visibility.value,
            self.access.allowed_users,
            self.access.allowed_roles,
            self.status.value,
        )


# The fields the layers fill with another record's id, by record type and where they are
# (``metadata`` or ``content.structured``): a key memory promoted from a cluster, the
# cluster's promoted key, a closed task's episode. A user's own fields of those names on
# other types are the user's data, left alone.
ID_FIELDS: Mapping[RecordType, tuple[str, str]] = {
    RecordType.KEY: ("metadata", "cluster_id"),
    RecordType.CLUSTER: ("structured", "promoted_key"),
    RecordType.TASK: ("structured", "episode_id"),
}
# The owner's usage a cluster keeps in its structured content: its recall hits.
USAGE_FIELDS: Mapping[RecordType, tuple[str, str]] = {RecordType.CLUSTER: ("structured", "hits")}


def _fields(record: MemoryRecord, where: str) -> Mapping[str, JSON]:
    found = record.metadata if where == "metadata" else record.content.structured
    return found if isinstance(found, Mapping) else {}


def references(record: MemoryRecord) -> set[str]:
    """The ids of other records ``record`` names: its provenance, relations, successor and
    the id field its layer writes (:data:`ID_FIELDS`)."""
    out = set(record.source_ids)
    out.update(r.target_id for r in record.relations)
    if record.superseded_by is not None:
        out.add(record.superseded_by)
    if record.type in ID_FIELDS:
        where, name = ID_FIELDS[record.type]
        named = _fields(record, where).get(name)
        if isinstance(named, str):
            out.add(named)
    out.discard(record.id)
    return out


def _shown_fields(record: MemoryRecord, where: str, readable: frozenset[str]) -> Mapping[str, JSON]:
    """``record``'s ``where`` fields with its id field set to ``None`` when it names an
    unreadable record and its usage field to 0 (the same object when nothing changes)."""
    fields = _fields(record, where)
    changed: dict[str, JSON] = {}
    if record.type in ID_FIELDS and ID_FIELDS[record.type][0] == where:
        name = ID_FIELDS[record.type][1]
        if isinstance(fields.get(name), str) and fields[name] not in readable:
            changed[name] = None
    if record.type in USAGE_FIELDS and USAGE_FIELDS[record.type][0] == where:
        name = USAGE_FIELDS[record.type][1]
        if fields.get(name):
            changed[name] = 0
    if not changed:
        return record.metadata if where == "metadata" else record.content.structured
    return {**fields, **changed}


def caller_view(
    record: MemoryRecord, scope: Scope, readable: frozenset[str], version: int | None = None
) -> MemoryRecord:
    """``record`` as a caller (``scope.caller``, another user reading what the owner shared)
    is shown it: the content and what it needs to use it, not who else the owner shares it
    with nor how the owner uses it. ``allowed_users`` keeps the caller only, ``allowed_roles``
    the roles the caller holds; ``access_count`` 0, ``last_accessed_at`` None and
    ``decay_score`` 1.0 (the owner's reads raise the first two and keep the third up);
    ``source_ids``, ``relations`` and ``superseded_by`` name only ids in ``readable`` (the
    record's own id always: a message lists itself), and so does the id field its layer
    writes (:data:`ID_FIELDS`, else ``None``); a cluster's recall ``hits`` (the owner's
    usage) show 0. The record unchanged for the owner. ``version``: the number the caller
    is shown (counted among the versions it may read, caller28), when known; else kept.
    Until session 27 a caller read every field as stored."""
    if scope.caller is None:
        return record
    access = record.access
    structured = _shown_fields(record, "structured", readable)
    return replace(
        record,
        version=record.version if version is None else version,
        access=AccessControl(
            access.visibility,
            tuple(u for u in access.allowed_users if u == scope.caller),
            tuple(r for r in access.allowed_roles if r in scope.roles),
        ),
        access_count=0,
        last_accessed_at=None,
        decay_score=1.0,
        source_ids=tuple(i for i in record.source_ids if i == record.id or i in readable),
        relations=tuple(r for r in record.relations if r.target_id in readable),
        superseded_by=record.superseded_by if record.superseded_by in readable else None,
        metadata=_shown_fields(record, "metadata", readable),
        content=record.content
        if structured is record.content.structured
        else replace(record.content, structured=structured),
    )
