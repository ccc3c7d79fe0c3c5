"""JSON-safe dictionaries from records and back (export/import, HTTP, stores' JSON columns)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from .clock import ensure_utc
from .errors import ImportFormatError, ValidationError
from .records import AccessControl, Content, MemoryRecord, Relation
from .validation import check_sequence, check_time

__all__ = ["record_from_dict", "record_to_dict"]

_TIMES = (
    "created_at",
    "updated_at",
    "observed_at",
    "last_accessed_at",
    "valid_from",
    "valid_to",
    "deleted_at",
)


def _iso(value: datetime | None) -> str | None:
    return None if value is None else ensure_utc(value).isoformat()


def record_to_dict(r: MemoryRecord) -> dict[str, Any]:
    return {
        "id": r.id,
        "tenant": r.tenant,
        "user": r.user,
        "agent": r.agent,
        "session": r.session,
        "type": r.type.value,
        "role": r.role.value if r.role else None,
        "content": {
            "raw": r.content.raw,
            "summary": r.content.summary,
            "structured": dict(r.content.structured),
        },
        "embedding_model": r.embedding_model,
        "embedding_dims": r.embedding_dims,
        "importance": r.importance,
        "confidence": r.confidence,
        "tags": list(r.tags),
        "source": r.source.value,
        "version": r.version,
        "access_count": r.access_count,
        "decay_score": r.decay_score,
        "superseded_by": r.superseded_by,
        "relations": [{"kind": x.kind, "target_id": x.target_id} for x in r.relations],
        "access": {
            "visibility": r.access.visibility.value,
            "allowed_users": list(r.access.allowed_users),
            "allowed_roles": list(r.access.allowed_roles),
        },
        "source_ids": list(r.source_ids),
        "metadata": dict(r.metadata),
        "content_hash": r.content_hash,
        "status": r.status.value,
        **{name: _iso(getattr(r, name)) for name in _TIMES},
    }


def _time(d: Mapping[str, Any], name: str) -> datetime | None:
    v = d.get(name)
    if v is None:
        return None
    return check_time(v, name)


def _mapping(value: object, name: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(f"{name} must be an object, got {type(value).__name__}")
    return value


def record_from_dict(d: Mapping[str, Any]) -> MemoryRecord:
    """Inverse of :func:`record_to_dict`; any defect is an :class:`ImportFormatError`.

    Only the shape is read here; :func:`memstrata.validation.validate_record` then checks
    every field as ``add`` does."""
    try:
        if not isinstance(d, Mapping):
            raise ValidationError(f"a record must be an object, got {type(d).__name__}")
        c = d["content"]
        if not isinstance(c, Mapping):
            raise ValidationError(f"content must be an object with 'raw', got {type(c).__name__}")
        acc = _mapping(d.get("access"), "access")
        times = {name: _time(d, name) for name in _TIMES}
        for required in ("created_at", "updated_at", "observed_at"):
            if times[required] is None:
                raise KeyError(required)
        return MemoryRecord(
            id=str(d["id"]),
            tenant=d["tenant"],
            user=d["user"],
            agent=d.get("agent"),
            session=d.get("session"),
            type=d["type"],
            role=d.get("role"),
            content=Content(
                raw=c["raw"],
                summary=c.get("summary"),
                structured=_mapping(c.get("structured"), "content.structured"),
            ),
            embedding_model=d.get("embedding_model"),
            embedding_dims=d.get("embedding_dims"),
            importance=d.get("importance", 0.5),
            confidence=d.get("confidence", 1.0),
            tags=tuple(check_sequence(d.get("tags") or [], "tags")),
            source=d.get("source", "explicit_user_input"),
            version=d.get("version", 1),
            access_count=d.get("access_count", 0),
            decay_score=d.get("decay_score", 1.0),
            superseded_by=d.get("superseded_by"),
            relations=tuple(
                Relation(x["kind"], x["target_id"])
                for x in check_sequence(d.get("relations") or [], "relations")
            ),
            access=AccessControl(
                visibility=acc.get("visibility", "private"),
                allowed_users=tuple(acc.get("allowed_users") or ()),
                allowed_roles=tuple(acc.get("allowed_roles") or ()),
            ),
            source_ids=tuple(d.get("source_ids") or ()),
            metadata=_mapping(d.get("metadata"), "metadata"),
            content_hash=d.get("content_hash", ""),
            status=d.get("status", "active"),
            created_at=times["created_at"],  # type: ignore[arg-type]
            updated_at=times["updated_at"],  # type: ignore[arg-type]
            observed_at=times["observed_at"],  # type: ignore[arg-type]
            last_accessed_at=times["last_accessed_at"],
            valid_from=times["valid_from"],
            valid_to=times["valid_to"],
            deleted_at=times["deleted_at"],
        )
    except KeyError as exc:
        raise ImportFormatError(f"record is missing the field {exc.args[0]!r}") from None
    except (TypeError, ValueError, AttributeError, ValidationError) as exc:
        raise ImportFormatError(f"record is malformed: {exc}") from None
