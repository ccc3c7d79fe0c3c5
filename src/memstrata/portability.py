"""Portable export/import: versioned JSON Lines, embeddings optional, scope remapping.

Line 1 is a header ``{"format": "memstrata.export", "version": 1, "embedding_model": ...,
"dims": ..., "exported_at": ...}``; every further line is ``{"record": {...},
"embedding": base64(float32) | null}``. An import checks every line before writing any.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import IO, Any

import numpy as np

from .codec import record_from_dict, record_to_dict
from .embedder.base import Matrix, check_vectors
from .errors import ImportFormatError, MemstrataError
from .records import MemoryRecord
from .scope import Scope
from .store.base import Vector
from .text import DEFAULT_MAX_CHARS
from .validation import validate_record

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "ImportReport", "export_jsonl", "read_jsonl"]

EXPORT_FORMAT = "memstrata.export"
EXPORT_VERSION = 1


@dataclass(frozen=True, slots=True)
class ImportReport:
    imported: int
    skipped: int
    reembedded: int


@dataclass(slots=True)
class ParsedImport:
    records: list[MemoryRecord] = field(default_factory=list)
    vectors: dict[str, Vector] = field(default_factory=dict)


def export_jsonl(
    fp: IO[str],
    records: Sequence[MemoryRecord],
    vectors: Matrix | None,
    *,
    model_id: str,
    dims: int,
    exported_at: datetime,
) -> int:
    header = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "embedding_model": model_id,
        "dims": dims,
        "exported_at": exported_at.isoformat(),
        "count": len(records),
    }
    fp.write(json.dumps(header, ensure_ascii=False) + "\n")
    for i, rec in enumerate(records):
        emb = None
        if vectors is not None:
            emb = base64.b64encode(np.asarray(vectors[i], dtype="<f4").tobytes()).decode("ascii")
        fp.write(
            json.dumps({"record": record_to_dict(rec), "embedding": emb}, ensure_ascii=False) + "\n"
        )
    return len(records)


def _header(line: str) -> dict[str, Any]:
    try:
        head = json.loads(line)
    except (ValueError, RecursionError):
        head = None
    if not isinstance(head, dict) or head.get("format") != EXPORT_FORMAT:
        raise ImportFormatError(
            "line 1 is not a memstrata export header; export with `memstrata export` first"
        )
    if head.get("version") != EXPORT_VERSION:
        raise ImportFormatError(
            f"export format version {head.get('version')!r} is not supported by this memstrata "
            f"(it reads version {EXPORT_VERSION}); upgrade memstrata to import it"
        )
    return head


_REMAP_NAMESPACE = uuid.UUID("6d656d73-7472-6174-612d-72656d617000")


def remapped_id(old_id: str, into: Scope) -> str:
    """The id a record gets when imported into ``into``: derived from the original id and
    the target tenant/user/agent, so importing the same export twice adds nothing."""
    key = "\x1f".join((into.tenant, into.user, into.agent or "", old_id))
    return uuid.uuid5(_REMAP_NAMESPACE, key).hex


def _remap(records: list[MemoryRecord], into: Scope) -> list[MemoryRecord]:
    """New ids for every record, references inside the import rewritten to match."""
    ids = {r.id: remapped_id(r.id, into) for r in records}
    out = []
    for r in records:
        out.append(
            replace(
                r,
                id=ids[r.id],
                tenant=into.tenant,
                user=into.user,
                agent=into.agent if into.agent is not None else r.agent,
                source_ids=tuple(ids.get(s, s) for s in r.source_ids),
                superseded_by=ids.get(r.superseded_by, r.superseded_by)
                if r.superseded_by
                else None,
                relations=tuple(
                    replace(x, target_id=ids.get(x.target_id, x.target_id)) for x in r.relations
                ),
            )
        )
    return out


def read_jsonl(
    fp: IO[str], *, into: Scope | None, model_id: str, dims: int, max_chars: int = DEFAULT_MAX_CHARS
) -> ParsedImport:
    """Parse and check a whole export; raises :class:`ImportFormatError` naming the line.

    Every record is checked field by field exactly as ``add`` checks its arguments
    (:func:`~memstrata.validation.validate_record`), so an import cannot store what
    ``add`` would refuse."""
    lines = iter(enumerate(fp, start=1))
    first = next(lines, None)
    if first is None:
        raise ImportFormatError("the import is empty: expected a memstrata export")
    head = _header(first[1])
    same_model = head.get("embedding_model") == model_id and head.get("dims") == dims
    records: list[MemoryRecord] = []
    raw_vectors: dict[str, Vector] = {}
    seen: set[str] = set()
    for number, line in lines:
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            if not isinstance(item, dict) or "record" not in item:
                raise ImportFormatError("expected an object with a 'record' field")
            rec = validate_record(record_from_dict(item["record"]), max_chars=max_chars)
            Scope(rec.tenant, rec.user, rec.agent, rec.session)  # the ids' own checks
            if rec.id in seen:
                raise ImportFormatError(f"record id {rec.id} appears twice")
            seen.add(rec.id)
            emb = item.get("embedding")
            if emb is not None and same_model:
                blob = base64.b64decode(emb, validate=True)
                vec = np.frombuffer(blob, dtype="<f4").astype(np.float32)
                raw_vectors[rec.id] = check_vectors(vec.reshape(1, -1), 1, dims, model_id)[0]
        except MemstrataError as exc:
            raise ImportFormatError(f"line {number}: {exc}") from None
        except (ValueError, RecursionError) as exc:
            raise ImportFormatError(f"line {number}: not valid export JSON ({exc})") from None
        records.append(replace(rec, embedding_model=model_id, embedding_dims=dims))
    if into is None:
        return ParsedImport(records, raw_vectors)
    remapped = _remap(records, into)
    vectors = {
        new.id: raw_vectors[old.id]
        for old, new in zip(records, remapped, strict=True)
        if old.id in raw_vectors
    }
    return ParsedImport(remapped, vectors)
