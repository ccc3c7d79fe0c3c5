"""Pure construction of records from what callers hand over (no I/O)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from .clock import ensure_utc
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

__all__ = ["check_scope", "message_record", "note_record"]


def check_scope(scope: object) -> Scope:
    if not isinstance(scope, Scope):
        raise ValidationError(
            f"scope must be a memstrata.Scope(tenant=..., user=...), got {type(scope).__name__}"
        )
    return scope


def _metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise ValidationError("metadata must be a mapping of string keys to JSON values")
    out = dict(metadata)
    for key in out:
        if not isinstance(key, str):
            raise ValidationError(f"metadata key {key!r} is not a string")
    return out


def message_record(scope: Scope, message: Message, *, now: datetime, model_id: str, dims: int,
                   max_chars: int) -> MemoryRecord:
    text = validate_content(message.content, max_chars=max_chars)
    rid = new_id()
    source = Source.EXPLICIT_USER_INPUT if message.role is Role.USER else Source.SYSTEM_GENERATED
    return MemoryRecord(
        id=rid, tenant=scope.tenant, user=scope.user, agent=scope.agent, session=scope.session,
        type=RecordType.MESSAGE, role=message.role, content=Content(raw=text),
        created_at=now, updated_at=now,
        observed_at=ensure_utc(message.observed_at) if message.observed_at else now,
        embedding_model=model_id, embedding_dims=dims, source=source,
        source_ids=(rid,), metadata=_metadata(message.metadata), content_hash=content_hash(text),
    )


def note_record(scope: Scope, content: object, *, type: RecordType | str, now: datetime,
                model_id: str, dims: int, max_chars: int, importance: float,
                confidence: float = 1.0, tags: Sequence[str] = (),
                metadata: Mapping[str, Any] | None = None,
                source: Source | str = Source.EXPLICIT_USER_INPUT,
                observed_at: datetime | None = None, visibility: Visibility | str | None = None,
                source_ids: Sequence[str] = (), valid_from: datetime | None = None,
                summary: str | None = None,
                structured: Mapping[str, Any] | None = None) -> MemoryRecord:
    text = validate_content(content, max_chars=max_chars)
    if isinstance(tags, str):
        raise ValidationError("tags must be a list of strings, not one string")
    vis = visibility or (Visibility.PRIVATE if scope.agent else Visibility.SHARED)
    return MemoryRecord(
        id=new_id(), tenant=scope.tenant, user=scope.user, agent=scope.agent,
        session=scope.session, type=type, content=Content(text, summary, dict(structured or {})),  # type: ignore[arg-type]
        created_at=now, updated_at=now,
        observed_at=ensure_utc(observed_at) if observed_at else now,
        embedding_model=model_id, embedding_dims=dims, importance=importance,
        confidence=confidence, tags=tuple(tags), source=source,  # type: ignore[arg-type]
        valid_from=ensure_utc(valid_from) if valid_from else None,
        access=AccessControl(visibility=vis),  # type: ignore[arg-type]
        source_ids=tuple(source_ids), metadata=_metadata(metadata),
        content_hash=content_hash(text),
    )
