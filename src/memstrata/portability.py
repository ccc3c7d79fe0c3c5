"""Portable export/import: versioned JSON Lines, embeddings optional, scope remapping.

Version 2 (written since 2026-11, a page of records at a time)::

    {"format": "memstrata.export", "version": 2, "embedding_model": ..., "dims": ...,
     "exported_at": ...}
    {"record": {...}, "embedding": base64(float32) | null}      (one line per record)
    {"end": "complete", "count": N}

The count is in the last line, not the header: an export is written while the user's
records are walked page by page, and what a walk will find is only known at its end (a
count first would be a second pass, and a write between the count and the walk would make
it lie). The end line is also how a reader knows the export is whole: an export cut off (a
dropped connection, a full disk, a crash) has none, and one that failed while it was being
streamed over HTTP ends with ``{"end": "failed", "error": {"code": ..., "message": ...}}``;
:func:`read_pages` refuses both, naming what happened.

Version 1 (before) has the same record lines and no end line; its header carries
``"count"``, which an import checks against the records it holds. An import checks every
line before writing any, and refuses what it would otherwise drop or misread: a field it
does not know (of a header, a line, a record or its nested objects; every export memstrata
has written holds none: see ``codec.RECORD_FIELDS``), a key given twice in an object, text
where a list belongs, and a record that contradicts itself
(:func:`~memstrata.validation.validate_record`).
"""

from __future__ import annotations

import base64
import json
import pickle
import tempfile
import uuid
from collections.abc import Callable, Container, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import IO, Any, Generic, TypeVar

import numpy as np

from .codec import check_fields, record_from_dict, record_to_dict
from .embedder.base import check_vectors
from .errors import ImportFormatError, MemstrataError
from .records import MemoryRecord
from .scope import Scope
from .store.base import Vector
from .text import DEFAULT_MAX_CHARS
from .validation import validate_record

__all__ = [
    "EXPORT_EMBED_BATCH",
    "EXPORT_FORMAT",
    "EXPORT_PAGE",
    "EXPORT_VERSION",
    "AnyOf",
    "ImportReport",
    "Item",
    "PageSpool",
    "collided_id",
    "end_line",
    "failed_line",
    "header_line",
    "read_pages",
    "record_lines",
    "remap_page",
    "remapped_id",
    "rename_page",
]

EXPORT_FORMAT = "memstrata.export"
EXPORT_VERSION = 2
READ_VERSIONS = (1, 2)
EXPORT_PAGE = 1000  # records read (and written) at a time: what an export holds in memory
EXPORT_EMBED_BATCH = 256  # texts per embedder call of an export with embeddings


class AnyOf:
    """The union of id containers, without copying them (an import's ids already stored
    and the facts it writes: no second set of every id of the file)."""

    def __init__(self, *parts: Container[str]) -> None:
        self._parts = parts

    def __contains__(self, item: object) -> bool:
        return any(item in part for part in self._parts)


@dataclass(frozen=True, slots=True)
class ImportReport:
    imported: int
    skipped: int
    reembedded: int
    # Of ``imported``: records whose id another record of the user holds (made since the
    # export: a fact key begun again after a purge names its first fact as before), kept
    # under a new id (:func:`collided_id`) beside it.
    renamed: int = 0


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False) + "\n"


def header_line(*, model_id: str, dims: int, exported_at: datetime) -> str:
    """The first line of a version-2 export."""
    return _line(
        {
            "format": EXPORT_FORMAT,
            "version": EXPORT_VERSION,
            "embedding_model": model_id,
            "dims": dims,
            "exported_at": exported_at.isoformat(),
        }
    )


def record_lines(records: Sequence[MemoryRecord], vectors: Sequence[Vector] | None) -> str:
    """One line per record (``vectors[i]`` is ``records[i]``'s, when given)."""
    out = []
    for i, rec in enumerate(records):
        emb = None
        if vectors is not None:
            emb = base64.b64encode(np.asarray(vectors[i], dtype="<f4").tobytes()).decode("ascii")
        out.append(_line({"record": record_to_dict(rec), "embedding": emb}))
    return "".join(out)


def end_line(count: int) -> str:
    """The last line of a whole export of ``count`` records."""
    return _line({"end": "complete", "count": count})


def failed_line(code: str, message: str) -> str:
    """The last line of an export that failed after it had started (the HTTP export)."""
    return _line({"end": "failed", "error": {"code": code, "message": message}})


# The fields of a header (version 1 also wrote "count") and of a record line; an import
# refuses any other (codec.check_fields), as it refuses an unknown field of a record (an
# end line's are checked by _check_end).
HEADER_FIELDS = frozenset(("format", "version", "embedding_model", "dims", "exported_at"))
V1_HEADER_FIELDS = HEADER_FIELDS | {"count"}
LINE_FIELDS = frozenset(("record", "embedding"))


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object of an export; a key given twice is refused (``json`` would keep the
    last value and drop the first without a word)."""
    d = dict(pairs)
    if len(d) == len(pairs):
        return d
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise ImportFormatError(
                f"an object has the key {key!r} twice (JSON would keep only the last value): "
                "keep the one you mean and import again; nothing was imported"
            )
        seen.add(key)
    return d  # not reached: a shorter dict means a key came twice


def _loads(line: str) -> Any:
    return json.loads(line, object_pairs_hook=_object)


def _header(line: str) -> dict[str, Any]:
    try:
        head = _loads(line)
    except ImportFormatError as exc:  # a key twice
        raise ImportFormatError(f"line 1: {exc}") from None
    except (ValueError, RecursionError):
        head = None
    if not isinstance(head, dict) or head.get("format") != EXPORT_FORMAT:
        raise ImportFormatError(
            "line 1 is not a memstrata export header; export with `memstrata export` first"
        )
    version = head.get("version")
    if isinstance(version, bool) or version not in READ_VERSIONS:
        raise ImportFormatError(
            f"export format version {version!r} is not supported by this memstrata "
            f"(it reads versions {', '.join(map(str, READ_VERSIONS))}); upgrade memstrata to "
            "import it"
        )
    try:
        check_fields(head, V1_HEADER_FIELDS if version == 1 else HEADER_FIELDS, "header")
    except ImportFormatError as exc:
        raise ImportFormatError(f"line 1: {exc}") from None
    count = head.get("count")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
        raise ImportFormatError(f"line 1: the header's count must be an integer, got {count!r}")
    return head


def _check_end(item: dict[str, Any], count: int) -> None:
    """A version-2 end line: the export is whole and holds ``count`` records, or refused."""
    if item.get("end") == "failed":
        error = item.get("error")
        why = error.get("message") if isinstance(error, dict) else None
        raise ImportFormatError(
            f"the export failed while it was written ({why or 'no reason given'}): it is "
            "incomplete; export again"
        )
    if item.get("end") != "complete" or set(item) != {"end", "count"}:
        raise ImportFormatError(
            'expected an end line {"end": "complete", "count": N} or a record line'
        )
    if isinstance(item["count"], bool) or item["count"] != count:
        raise ImportFormatError(
            f"the end line counts {item['count']!r} records but the export holds {count}: "
            "lines are missing or were added; export again"
        )


_REMAP_NAMESPACE = uuid.UUID("6d656d73-7472-6174-612d-72656d617000")


def remapped_id(old_id: str, into: Scope) -> str:
    """The id a record gets when imported into ``into``: derived from the original id and
    the target tenant/user/agent, so importing the same export twice adds nothing."""
    key = "\x1f".join((into.tenant, into.user, into.agent or "", old_id))
    return uuid.uuid5(_REMAP_NAMESPACE, key).hex


def collided_id(old_id: str, created_at: datetime) -> str:
    """The id an imported record gets when ``old_id`` is held by another record of the user
    (one created at another time): derived from both, so importing the same export again
    finds it and adds nothing."""
    key = "\x1f".join(("collided", old_id, created_at.isoformat()))
    return uuid.uuid5(_REMAP_NAMESPACE, key).hex


def rename_page(page: Sequence[Item], renamed: Mapping[str, str]) -> list[Item]:
    """``page`` with the ids in ``renamed`` replaced, each reference to them included."""
    if not renamed:
        return list(page)

    def new(old: str) -> str:
        return renamed.get(old, old)

    return [(_referring(r, new, id=new(r.id)), vec) for r, vec in page]


def _referring(r: MemoryRecord, new: Callable[[str], str], **changes: Any) -> MemoryRecord:
    """``r`` with ``changes`` and each id it names of another record (its sources, its
    successor, its relations' targets) passed through ``new``."""
    return replace(
        r,
        source_ids=tuple(new(s) for s in r.source_ids),
        superseded_by=new(r.superseded_by) if r.superseded_by else None,
        relations=tuple(replace(x, target_id=new(x.target_id)) for x in r.relations),
        **changes,
    )


Item = tuple[MemoryRecord, Vector | None]  # a record of an import, with its file vector
T = TypeVar("T")


def read_pages(
    fp: IO[str],
    *,
    model_id: str,
    dims: int,
    max_chars: int = DEFAULT_MAX_CHARS,
    ids: set[str] | None = None,
    page_size: int = EXPORT_PAGE,
) -> Iterator[list[Item]]:
    """Parse and check an export (version 1 or 2) a page of ``page_size`` records at a
    time, each with its vector from the file (``None`` when the line has none or the file's
    model is not ``model_id``/``dims``); raises :class:`ImportFormatError` naming the line.
    A version-2 export must end with its end line (see the module); each end line counts
    the records since the header or the end line before it, so exports joined after their
    headers (``tail -n +2``) read as one. Pages come out as they are checked: what
    follows a page may still be refused (a bad line, no end line), so a caller writes
    nothing before the iteration has ended. ``ids`` collects the records' ids (a record id
    that appears twice is refused).

    Every record is checked field by field exactly as ``add`` checks its arguments
    (:func:`~memstrata.validation.validate_record`), so an import cannot store what
    ``add`` would refuse."""
    lines = iter(enumerate(fp, start=1))
    first = next(lines, None)
    if first is None:
        raise ImportFormatError("the import is empty: expected a memstrata export")
    head = _header(first[1])
    same_model = head.get("embedding_model") == model_id and head.get("dims") == dims
    seen: set[str] = set() if ids is None else ids
    page: list[Item] = []
    total = 0
    version = head["version"]
    ended = version == 1  # a version-1 export has no end line
    since_end = 0  # records since the header or the last end line (exports joined)
    for number, line in lines:
        if not line.strip():
            continue
        vec: Vector | None = None
        try:
            item = _loads(line)
            if version >= 2 and isinstance(item, dict) and "end" in item:
                _check_end(item, since_end)
                ended, since_end = True, 0
                continue
            ended = version == 1
            if not isinstance(item, dict) or "record" not in item:
                raise ImportFormatError("expected an object with a 'record' field")
            check_fields(item, LINE_FIELDS, "the line")
            rec = validate_record(record_from_dict(item["record"], exact=True), max_chars=max_chars)
            Scope(rec.tenant, rec.user, rec.agent, rec.session)  # the ids' own checks
            if rec.id in seen:
                raise ImportFormatError(f"record id {rec.id} appears twice")
            seen.add(rec.id)
            emb = item.get("embedding")
            if emb is not None and not isinstance(emb, str):  # b64decode: a TypeError
                raise ImportFormatError(
                    f"embedding must be base64 text (as exported) or null, got {type(emb).__name__}"
                )
            if emb is not None and same_model:
                blob = base64.b64decode(emb, validate=True)
                raw = np.frombuffer(blob, dtype="<f4").astype(np.float32)
                vec = check_vectors(raw.reshape(1, -1), 1, dims, model_id)[0]
        except MemstrataError as exc:
            raise ImportFormatError(f"line {number}: {exc}") from None
        except (ValueError, RecursionError) as exc:
            raise ImportFormatError(f"line {number}: not valid export JSON ({exc})") from None
        page.append((replace(rec, embedding_model=model_id, embedding_dims=dims), vec))
        since_end += 1
        total += 1
        if len(page) >= page_size:
            yield page
            page = []
    if version == 1 and head.get("count") is not None and head["count"] != total:
        raise ImportFormatError(
            f"the header counts {head['count']} records but the export holds {total}: lines "
            "are missing or were added (a cut or edited file); nothing was imported; export "
            "again"
        )
    if not ended:
        raise ImportFormatError(
            f"the export does not end with its end line (after {total} records): it "
            "was cut off (an interrupted download or export) and nothing was imported; "
            "export again"
        )
    if page:
        yield page


def remap_page(page: Sequence[Item], into: Scope, ids: Container[str]) -> list[Item]:
    """The records of an import into ``into``: new ids (:func:`remapped_id`), and each
    reference to a record of the same import (``ids``: every id it holds) rewritten to
    match; references to records outside it are kept."""

    def new(old: str) -> str:
        return remapped_id(old, into) if old in ids else old

    return [
        (
            _referring(
                r,
                new,
                id=remapped_id(r.id, into),
                tenant=into.tenant,
                user=into.user,
                agent=into.agent if into.agent is not None else r.agent,
            ),
            vec,
        )
        for r, vec in page
    ]


class PageSpool(Generic[T]):
    """Pages of an import kept on disk between its passes (a temporary file, deleted when
    closed), so that an import holds a page in memory, not the file. Written and read
    back by this process only (pickle of its own values)."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()/__exit__
        self.records = 0

    def add(self, page: Sequence[T]) -> None:
        if page:
            pickle.dump(list(page), self._file, protocol=pickle.HIGHEST_PROTOCOL)
            self.records += len(page)

    def pages(self) -> Iterator[list[T]]:
        """Every page added, in order (from the start at each call)."""
        self._file.flush()
        self._file.seek(0)
        while True:
            try:
                page: list[T] = pickle.load(self._file)  # noqa: S301 - our own file
            except EOFError:
                return
            yield page

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> PageSpool[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
