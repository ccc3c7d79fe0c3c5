"""JSON-safe dictionaries from records and back (export/import, HTTP, stores' JSON columns)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from .clock import ensure_utc
from .errors import ImportFormatError, ValidationError
from .records import AccessControl, Content, MemoryRecord, Relation
from .validation import check_sequence, check_time

__all__ = [
    "ACCESS_FIELDS",
    "CONTENT_FIELDS",
    "LEGACY_FIELDS",
    "RECORD_FIELDS",
    "RELATION_FIELDS",
    "check_fields",
    "record_from_dict",
    "record_to_dict",
]

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


# The fields of an export's record line, as :func:`record_to_dict` writes them, and of its
# nested objects (and of a format-3 ``past_version`` line's record: the same fields). An
# import refuses a field outside these (``exact``): memstrata cannot store it, and dropping
# it would lose what the file says without a word. Every export memstrata has written
# (format version 1 since the first, cb2c9c9, version 2 and version 3) holds exactly
# these: ``git log -p -- src/memstrata/codec.py src/memstrata/portability.py`` shows the
# set never changed, so no retired field has to be let through. A field that
# a later version retires goes into LEGACY_FIELDS (read and ignored, documented), so
# the backups that carry it stay readable.
RECORD_FIELDS = frozenset(
    (
        "id",
        "tenant",
        "user",
        "agent",
        "session",
        "type",
        "role",
        "content",
        "embedding_model",
        "embedding_dims",
        "importance",
        "confidence",
        "tags",
        "source",
        "version",
        "access_count",
        "decay_score",
        "superseded_by",
        "relations",
        "access",
        "source_ids",
        "metadata",
        "content_hash",
        "status",
        *_TIMES,
    )
)
CONTENT_FIELDS = frozenset(("raw", "summary", "structured"))
ACCESS_FIELDS = frozenset(("visibility", "allowed_users", "allowed_roles"))
RELATION_FIELDS = frozenset(("kind", "target_id"))
# where (a path of the record) -> fields older exports wrote there that today's reader
# ignores; none so far (see above)
LEGACY_FIELDS: Mapping[str, frozenset[str]] = {}


def check_fields(value: Mapping[str, Any], known: frozenset[str], where: str) -> None:
    """Refuse a field of ``value`` outside ``known`` (and the legacy fields of ``where``)
    with an :class:`ImportFormatError` naming it, the nearest known name when one is close,
    and what to do."""
    legacy = LEGACY_FIELDS.get(where, frozenset())
    for name in value:
        if name in known or name in legacy:
            continue
        near = difflib.get_close_matches(str(name), sorted(known), n=1)
        hint = f"rename it to {near[0]!r} if that is what it holds, " if near else ""
        listed = f" (it knows {', '.join(sorted(known))})" if len(known) <= 6 else ""
        raise ImportFormatError(
            f"{where} has the field {name!r}, which memstrata does not know{listed}; an "
            f"import refuses what it would have to drop: {hint}remove it if its value may "
            "be lost, or import the file with the newer memstrata that wrote it; nothing "
            "was imported"
        )


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


def _list(value: object, name: str) -> Sequence[Any]:
    """A JSON list (``null`` is an empty one); text is refused, not split into letters."""
    if value is None:
        return ()
    return check_sequence(value, name)


def _relation(value: object, i: int, exact: bool) -> Relation:
    where = f"relations[{i}]"
    if not isinstance(value, Mapping):
        raise ValidationError(
            f'{where} must be an object {{"kind": ..., "target_id": ...}}, got '
            f"{type(value).__name__}"
        )
    if exact:
        check_fields(value, RELATION_FIELDS, where)
    return Relation(value["kind"], value["target_id"])


def record_from_dict(d: Mapping[str, Any], *, exact: bool = False) -> MemoryRecord:
    """Inverse of :func:`record_to_dict`; any defect is an :class:`ImportFormatError`.

    With ``exact`` (an import) a field it does not know, at any level of the record, is
    refused (:func:`check_fields`) rather than dropped. Lists must be lists and objects
    objects (``null`` stands for an empty one). Only the shape is read here;
    :func:`memstrata.validation.validate_record` then checks every field as ``add``
    does."""
    try:
        if not isinstance(d, Mapping):
            raise ValidationError(f"a record must be an object, got {type(d).__name__}")
        if exact:
            check_fields(d, RECORD_FIELDS, "record")
        c = d["content"]
        if not isinstance(c, Mapping):
            raise ValidationError(f"content must be an object with 'raw', got {type(c).__name__}")
        acc = _mapping(d.get("access"), "access")
        if exact:
            check_fields(c, CONTENT_FIELDS, "content")
            check_fields(acc, ACCESS_FIELDS, "access")
        times = {name: _time(d, name) for name in _TIMES}
        for required in ("created_at", "updated_at", "observed_at"):
            if times[required] is None:
                raise KeyError(required)
        return MemoryRecord(
            id=d["id"],
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
            tags=tuple(_list(d.get("tags"), "tags")),
            source=d.get("source", "explicit_user_input"),
            version=d.get("version", 1),
            access_count=d.get("access_count", 0),
            decay_score=d.get("decay_score", 1.0),
            superseded_by=d.get("superseded_by"),
            relations=tuple(
                _relation(x, i, exact) for i, x in enumerate(_list(d.get("relations"), "relations"))
            ),
            access=AccessControl(
                visibility=acc.get("visibility", "private"),
                allowed_users=tuple(_list(acc.get("allowed_users"), "access.allowed_users")),
                allowed_roles=tuple(_list(acc.get("allowed_roles"), "access.allowed_roles")),
            ),
            source_ids=tuple(_list(d.get("source_ids"), "source_ids")),
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
    except ImportFormatError:
        raise
    except KeyError as exc:
        raise ImportFormatError(f"record is missing the field {exc.args[0]!r}") from None
    except (TypeError, ValueError, AttributeError, ValidationError) as exc:
        raise ImportFormatError(f"record is malformed: {exc}") from None
