"""Pure construction of records from what callers hand over (no I/O)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from .errors import ValidationError
from .records import (
    AccessControl,
    Content,
    MemoryRecord,
    Message,
    RecordType,
    Role,
    Source,
    Visibility,
    new_id,
)
from .scope import Scope
from .text import content_hash, validate_content
from .validation import (
    check_enum,
    check_ids,
    check_metadata,
    check_tags,
    check_time,
    check_unit,
)

__all__ = ["check_owner", "check_scope", "message_record", "note_record", "to_message"]


def check_scope(scope: object) -> Scope:
    if not isinstance(scope, Scope):
        raise ValidationError(
            f"scope must be a memstrata.Scope(tenant=..., user=...), got {type(scope).__name__}"
        )
    return scope


def check_owner(scope: object) -> Scope:
    """:func:`check_scope` for a write: a caller's scope (``Scope(caller=...)``) reads what
    its user shared with the caller and changes nothing (README, access control)."""
    checked = check_scope(scope)
    if checked.caller is not None:
        raise ValidationError(
            f"caller {checked.caller!r} may read what {checked.user!r} shared, but not change "
            "it: write through the caller's own scope (without caller=)"
        )
    return checked


def to_message(item: object, index: int = 0) -> Message:
    """A :class:`Message`, or a mapping with its fields (``role``, ``content``,
    ``observed_at``, ``metadata``), checked."""
    if isinstance(item, Message):
        return item
    field = f"messages[{index}]"
    if not isinstance(item, Mapping):
        raise ValidationError(
            f"{field} must be a Message or a mapping with role and content, "
            f"got {type(item).__name__}"
        )
    unknown = sorted(str(k) for k in item if k not in _MESSAGE_FIELDS)
    if unknown or "role" not in item or "content" not in item:
        raise ValidationError(
            f"{field} needs the keys role and content (optional: "
            f"observed_at, metadata); unknown: {unknown}"
        )
    return Message(**{str(k): v for k, v in item.items()})


_MESSAGE_FIELDS = frozenset({"role", "content", "observed_at", "metadata"})


def message_record(
    scope: Scope, message: Message, *, now: datetime, model_id: str, dims: int, max_chars: int
) -> MemoryRecord:
    text = validate_content(message.content, max_chars=max_chars)
    # "is not None": 0, "" or False are refused by check_time, not taken for "now"
    observed = (
        check_time(message.observed_at, "observed_at") if message.observed_at is not None else now
    )
    metadata = check_metadata(message.metadata)
    rid = new_id()
    source = Source.EXPLICIT_USER_INPUT if message.role is Role.USER else Source.SYSTEM_GENERATED
    return MemoryRecord(
        id=rid,
        tenant=scope.tenant,
        user=scope.user,
        agent=scope.agent,
        session=scope.session,
        type=RecordType.MESSAGE,
        role=message.role,
        content=Content(raw=text),
        created_at=now,
        updated_at=now,
        observed_at=observed,
        embedding_model=model_id,
        embedding_dims=dims,
        source=source,
        source_ids=(rid,),
        metadata=metadata,
        content_hash=content_hash(text),
    )


def note_record(
    scope: Scope,
    content: object,
    *,
    type: RecordType | str,
    now: datetime,
    model_id: str,
    dims: int,
    max_chars: int,
    importance: float,
    confidence: float = 1.0,
    tags: Sequence[str] = (),
    metadata: Mapping[str, Any] | None = None,
    source: Source | str = Source.EXPLICIT_USER_INPUT,
    observed_at: datetime | None = None,
    visibility: Visibility | str | None = None,
    source_ids: Sequence[str] = (),
    valid_from: datetime | None = None,
    summary: str | None = None,
    structured: Mapping[str, Any] | None = None,
) -> MemoryRecord:
    text = validate_content(content, max_chars=max_chars)
    vis = (
        check_enum(Visibility, visibility, "visibility")
        if visibility is not None
        else Visibility.PRIVATE
        if scope.agent
        else Visibility.SHARED
    )
    if summary is not None:
        summary = validate_content(summary, max_chars=max_chars, field="summary")
    return MemoryRecord(
        id=new_id(),
        tenant=scope.tenant,
        user=scope.user,
        agent=scope.agent,
        session=scope.session,
        type=check_enum(RecordType, type, "type"),
        content=Content(text, summary, check_metadata(structured, "structured")),
        created_at=now,
        updated_at=now,
        observed_at=check_time(observed_at, "observed_at") if observed_at is not None else now,
        embedding_model=model_id,
        embedding_dims=dims,
        importance=check_unit(importance, "importance"),
        confidence=check_unit(confidence, "confidence"),
        tags=check_tags(tags),
        source=check_enum(Source, source, "source"),
        valid_from=check_time(valid_from, "valid_from") if valid_from is not None else None,
        access=AccessControl(visibility=vis),
        # each source once: a record made from records that cite the same messages (an
        # episode of earlier episodes) doubled its list with every generation
        source_ids=tuple(dict.fromkeys(check_ids(source_ids, "source_ids"))),
        metadata=check_metadata(metadata),
        content_hash=content_hash(text),
    )
