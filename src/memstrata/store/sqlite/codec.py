"""Record <-> row: the one place that knows how a :class:`MemoryRecord` is laid out in SQL.

Scalar fields that queries filter or sort on are plain columns; nested parts (structured
content, tags, relations, access control, provenance, metadata) are JSON text. Times are
ISO-8601 UTC text with a fixed width (``2024-05-01T09:30:00.000000Z``), so text order is
time order and a round trip is exact to the microsecond (epoch floats are not).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ...clock import ensure_utc
from ...errors import ValidationError
from ...records import (
    AccessControl,
    Content,
    MemoryRecord,
    RecordStatus,
    RecordType,
    Relation,
    Role,
    Source,
    Visibility,
)
from ...traces import keeps_words
from ..base import Vector
from ..types import RecordView, speaker_of

__all__ = [
    "COLUMNS",
    "decode_record",
    "decode_time",
    "decode_vector",
    "decode_view",
    "encode_record",
    "encode_time",
    "encode_vector",
    "scope_token",
]

# Order matters: it is the column order of ``records`` and ``record_versions`` (after seq).
COLUMNS: tuple[str, ...] = (
    "id",
    "tenant",
    "user",
    "agent",
    "session",
    "visibility",
    "type",
    "role",
    "raw",
    "summary",
    "structured",
    "embedding_model",
    "embedding_dims",
    "importance",
    "confidence",
    "tags",
    "source",
    "version",
    "created_at",
    "updated_at",
    "observed_at",
    "last_accessed_at",
    "access_count",
    "decay_score",
    "valid_from",
    "valid_to",
    "superseded_by",
    "relations",
    "access",
    "source_ids",
    "metadata",
    "content_hash",
    "status",
    "deleted_at",
)


def encode_time(when: datetime | None) -> str | None:
    """Fixed-width ISO-8601 UTC text for every year 1–9999.

    Written by hand, not with ``strftime("%Y")``: glibc does not zero-pad years below 1000
    (``'999-01-01...'``), which ``fromisoformat`` cannot read back, so one such time made a
    user's every read fail (issue 7 §2)."""
    if when is None:
        return None
    u = ensure_utc(when)
    return (
        f"{u.year:04d}-{u.month:02d}-{u.day:02d}T{u.hour:02d}:{u.minute:02d}:"
        f"{u.second:02d}.{u.microsecond:06d}Z"
    )


def decode_time(text: str | None) -> datetime | None:
    if text is None:
        return None
    # fromisoformat (C, ~20x faster than strptime) reads exactly what encode_time writes.
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return _decode_unpadded(text)


def _decode_unpadded(text: str) -> datetime:
    """Read a time an older memstrata wrote with an unpadded year (``'999-01-01T...Z'``)."""
    year, sep, rest = text.partition("-")
    if sep and year.isdigit() and len(year) < 4:
        try:
            return datetime.fromisoformat(f"{int(year):04d}-{rest}")
        except ValueError:
            pass
    raise ValidationError(f"the stored time {text!r} cannot be read; the database file is damaged")


def _time(text: str) -> datetime:
    when = decode_time(text)
    if when is None:  # a NOT NULL column; only a hand-edited file gets here
        raise ValidationError("a required time column is NULL; the database file is damaged")
    return when


# One encoder for every call: ``json.dumps`` with options builds a new one each time.
_ENCODE = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode


def _json(value: Any) -> str:
    if not value and (type(value) is list or type(value) is dict):
        return "[]" if type(value) is list else "{}"  # most of a turn's JSON columns
    try:
        return _ENCODE(value)
    except (TypeError, ValueError) as exc:
        raise ValidationError(
            f"record field is not JSON-serialisable ({exc}); store plain str/number/list/dict"
        ) from None


@functools.lru_cache(maxsize=4096)
def scope_token(tenant: str, user: str) -> str:
    """A short opaque token naming one (tenant, user): the FTS scope column and cache key.

    Hashed so that no raw id lingers in the index or the generation table after a purge.
    """
    digest = hashlib.blake2b(f"{tenant}\x00{user}".encode(), digest_size=10).hexdigest()
    return "s" + digest


keeps_words(scope_token.cache_clear)  # its keys are user ids (memstrata.traces)


def encode_record(r: MemoryRecord) -> tuple[Any, ...]:
    """The row values in :data:`COLUMNS` order."""
    access = {
        "visibility": r.access.visibility.value,
        "allowed_users": list(r.access.allowed_users),
        "allowed_roles": list(r.access.allowed_roles),
    }
    return (
        r.id,
        r.tenant,
        r.user,
        r.agent,
        r.session,
        r.access.visibility.value,
        r.type.value,
        r.role.value if r.role is not None else None,
        r.content.raw,
        r.content.summary,
        _json(dict(r.content.structured)),
        r.embedding_model,
        r.embedding_dims,
        r.importance,
        r.confidence,
        _json(list(r.tags)),
        r.source.value,
        r.version,
        encode_time(r.created_at),
        encode_time(r.updated_at),
        encode_time(r.observed_at),
        encode_time(r.last_accessed_at),
        r.access_count,
        r.decay_score,
        encode_time(r.valid_from),
        encode_time(r.valid_to),
        r.superseded_by,
        _json([[rel.kind, rel.target_id] for rel in r.relations]),
        _json(access),
        _json(list(r.source_ids)),
        _json(dict(r.metadata)),
        r.content_hash,
        r.status.value,
        encode_time(r.deleted_at),
    )


def decode_record(row: Mapping[str, Any] | sqlite3.Row) -> MemoryRecord:
    """Build a record from a row that has (at least) every column of :data:`COLUMNS`.

    Rows were validated when they were written, so the record is built without running
    ``MemoryRecord.__post_init__`` again (that validation was most of a read's cost: 55 µs of
    a record's decode). The enum columns are still checked: a value this code does not know
    (a damaged or hand-edited file) goes through the validating constructor, which raises.
    """
    if isinstance(row, sqlite3.Row):  # its by-name lookup is a linear, case-blind scan
        row = dict(zip(row.keys(), row, strict=True))
    try:
        enums = (
            _TYPES[row["type"]],
            _SOURCES[row["source"]],
            _STATUSES[row["status"]],
            None if row["role"] is None else _ROLES[row["role"]],
        )
        access_text = row["access"]
        access = _ACCESS_PRIVATE if access_text == _PRIVATE_TEXT else _access(access_text)
    except KeyError:
        return _decode_validated(row)
    out = _new_record(MemoryRecord)
    values = (
        row["id"],
        row["tenant"],
        row["user"],
        enums[0],
        Content(row["raw"], row["summary"], _object(row["structured"])),
        _time(row["created_at"]),
        _time(row["updated_at"]),
        _time(row["observed_at"]),
        row["agent"],
        row["session"],
        enums[3],
        row["embedding_model"],
        row["embedding_dims"],
        row["importance"],
        row["confidence"],
        _strings(row["tags"]),
        enums[1],
        row["version"],
        decode_time(row["last_accessed_at"]),
        row["access_count"],
        row["decay_score"],
        decode_time(row["valid_from"]),
        decode_time(row["valid_to"]),
        row["superseded_by"],
        _relations(row["relations"]),
        access,
        _strings(row["source_ids"]),
        _object(row["metadata"]),
        row["content_hash"],
        enums[2],
        decode_time(row["deleted_at"]),
    )
    for name, value in zip(_RECORD_FIELDS, values, strict=True):
        _set(out, name, value)
    return out


# The columns ``decode_view`` reads, in this order.
VIEW_COLUMNS = "id, type, raw, role, session, observed_at, source_ids, metadata"


def decode_view(row: Sequence[Any]) -> RecordView:
    """What a context shows of the record in ``row`` (the values of :data:`VIEW_COLUMNS`, in
    order), each field as :func:`decode_record` reads it; the metadata is parsed only when
    it names a speaker, the sources only when they are not the record itself (a turn's)."""
    rid, kind, raw, role, session, observed_at, sources, meta = row
    if kind not in _TYPES or (role is not None and role not in _ROLES):
        raise ValidationError(
            f"record {rid!r} has type {kind!r} and role {role!r}, which this version does "
            "not know; the database file is damaged or newer than this memstrata"
        )
    return RecordView(
        rid,
        _TYPES[kind],
        raw,
        None if role is None else _ROLES[role],
        session,
        _time(observed_at),
        (rid,) if sources == f'["{rid}"]' and "\\" not in rid else _strings(sources),
        speaker_of(_object(meta)) if '"speaker"' in meta else None,
    )


def _decode_validated(row: Mapping[str, Any] | sqlite3.Row) -> MemoryRecord:
    access = json.loads(row["access"])
    return MemoryRecord(
        id=row["id"],
        tenant=row["tenant"],
        user=row["user"],
        agent=row["agent"],
        session=row["session"],
        type=row["type"],
        role=row["role"],
        content=Content(row["raw"], row["summary"], json.loads(row["structured"])),
        embedding_model=row["embedding_model"],
        embedding_dims=row["embedding_dims"],
        importance=row["importance"],
        confidence=row["confidence"],
        tags=tuple(json.loads(row["tags"])),
        source=row["source"],
        version=row["version"],
        created_at=_time(row["created_at"]),
        updated_at=_time(row["updated_at"]),
        observed_at=_time(row["observed_at"]),
        last_accessed_at=decode_time(row["last_accessed_at"]),
        access_count=row["access_count"],
        decay_score=row["decay_score"],
        valid_from=decode_time(row["valid_from"]),
        valid_to=decode_time(row["valid_to"]),
        superseded_by=row["superseded_by"],
        relations=tuple(Relation(k, t) for k, t in json.loads(row["relations"])),
        access=AccessControl(
            Visibility(access["visibility"]),
            tuple(access["allowed_users"]),
            tuple(access["allowed_roles"]),
        ),
        source_ids=tuple(json.loads(row["source_ids"])),
        metadata=json.loads(row["metadata"]),
        content_hash=row["content_hash"],
        status=row["status"],
        deleted_at=decode_time(row["deleted_at"]),
    )


# The fast path of decode_record sets MemoryRecord's fields in this order; the check below
# fails at import if a field is added to the record and not here.
_RECORD_FIELDS = (
    "id",
    "tenant",
    "user",
    "type",
    "content",
    "created_at",
    "updated_at",
    "observed_at",
    "agent",
    "session",
    "role",
    "embedding_model",
    "embedding_dims",
    "importance",
    "confidence",
    "tags",
    "source",
    "version",
    "last_accessed_at",
    "access_count",
    "decay_score",
    "valid_from",
    "valid_to",
    "superseded_by",
    "relations",
    "access",
    "source_ids",
    "metadata",
    "content_hash",
    "status",
    "deleted_at",
)
if tuple(f.name for f in dataclasses.fields(MemoryRecord)) != _RECORD_FIELDS:  # pragma: no cover
    raise ValidationError(
        "codec._RECORD_FIELDS and MemoryRecord's fields disagree; fix store/sqlite/codec.py"
    )
_new_record = object.__new__
_set = object.__setattr__
_TYPES = {e.value: e for e in RecordType}
_SOURCES = {e.value: e for e in Source}
_STATUSES = {e.value: e for e in RecordStatus}
_ROLES = {e.value: e for e in Role}
_PRIVATE_TEXT = '{"allowed_roles":[],"allowed_users":[],"visibility":"private"}'
_ACCESS_PRIVATE = AccessControl(Visibility.PRIVATE)


def _access(text: str) -> AccessControl:
    access = json.loads(text)
    return AccessControl(
        Visibility(access["visibility"]),
        tuple(access["allowed_users"]),
        tuple(access["allowed_roles"]),
    )


def _object(text: str) -> Any:
    return {} if text == "{}" else json.loads(text)


def _strings(text: str) -> tuple[str, ...]:
    return () if text == "[]" else tuple(json.loads(text))


def _relations(text: str) -> tuple[Relation, ...]:
    return () if text == "[]" else tuple(Relation(k, t) for k, t in json.loads(text))


def encode_vector(vector: Vector) -> bytes:
    arr = np.asarray(vector, dtype=np.float32)
    if arr.ndim != 1 or arr.size == 0:
        raise ValidationError(f"a vector must be a non-empty 1-D array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValidationError("a vector contains NaN or infinity; check the embedder output")
    return arr.astype("<f4").tobytes()


def decode_vector(blob: bytes) -> Vector:
    return np.frombuffer(blob, dtype="<f4").astype(np.float32)
