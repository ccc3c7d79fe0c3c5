"""Portable export/import: versioned JSON Lines, embeddings optional, scope remapping.

Version 3 (written since 2026-11-27: version 2 with each record's history)::

    {"format": "memstrata.export", "version": 3, ...the header of version 2...}
    {"record": {...}, "embedding": ...}                         (the record as it is now)
    {"past_version": {...}}      (each earlier version of it, oldest first, after its line)
    {"end": "complete", "count": N, "past_versions": M}

A ``past_version`` is a whole record (``codec.record_to_dict``): the record as it was
before an update, a delete or restore, an access change..., with the tenant, user and id
of the record line it follows and a version number below the next one's and the
record's; no embedding (a store keeps the current version's vector only). The end line
counts the past versions too, so a line dropped from the middle of a history is found.
An export without history (``include_history=False``) is written as version 2, which a
memstrata that predates version 3 reads too.

Version 2 (written from 2026-11 to 2026-11-27, a page of records at a time)::

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
(:func:`~memstrata.validation.validate_record`); and history that contradicts its record
(a past version of another id, tenant or user, not below the record's version, out of
order, or before any record line).
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

from . import json_keys
from .codec import check_fields, record_from_dict, record_to_dict
from .embedder.base import check_vectors
from .errors import ImportFormatError, MemstrataError, StoreError
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
    "HISTORY_PAGE",
    "PLAIN_VERSION",
    "AnyOf",
    "Continued",
    "Entry",
    "ImportReport",
    "Item",
    "PageSpool",
    "spool_failed",
    "collided_id",
    "end_line",
    "failed_line",
    "header_line",
    "history_runs",
    "past_lines",
    "read_pages",
    "record_lines",
    "remap_page",
    "remapped_id",
    "rename_page",
]

EXPORT_FORMAT = "memstrata.export"
EXPORT_VERSION = 3  # with history
PLAIN_VERSION = 2  # without (include_history=False): what memstrata before 3 reads
READ_VERSIONS = (1, 2, 3)
EXPORT_PAGE = 1000  # records read (and written) at a time: what an export holds in memory
# Past versions an export reads at a time, and an import holds in a page besides its
# records; a record with more is imported in parts of this many (:class:`Continued`).
HISTORY_PAGE = 5000
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
    # Earlier versions written with the imported records (the file's past_version lines
    # of the records imported; those of records skipped are skipped with them).
    versions: int = 0


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False) + "\n"


def header_line(
    *, model_id: str, dims: int, exported_at: datetime, version: int = EXPORT_VERSION
) -> str:
    """The first line of an export of ``version`` (3 with history, 2 without)."""
    return _line(
        {
            "format": EXPORT_FORMAT,
            "version": version,
            "embedding_model": model_id,
            "dims": dims,
            "exported_at": exported_at.isoformat(),
        }
    )


def record_lines(
    records: Sequence[MemoryRecord],
    vectors: Sequence[Vector] | None,
    past: Mapping[str, Sequence[MemoryRecord]] | None = None,
) -> str:
    """One line per record (``vectors[i]`` is ``records[i]``'s, when given), each followed
    by a line per earlier version of it in ``past`` (by id, oldest first: version 3)."""
    out = []
    for i, rec in enumerate(records):
        emb = None
        if vectors is not None:
            emb = base64.b64encode(np.asarray(vectors[i], dtype="<f4").tobytes()).decode("ascii")
        out.append(_line({"record": record_to_dict(rec), "embedding": emb}))
        if past:  # the lines themselves: one copy of a history's text, joined once
            out += [_line({"past_version": record_to_dict(v)}) for v in past.get(rec.id, ())]
    return "".join(out)


def past_lines(versions: Sequence[MemoryRecord]) -> str:
    """A ``past_version`` line per earlier version (oldest first: after their record's
    line, or after the part of its history before them)."""
    return "".join(_line({"past_version": record_to_dict(v)}) for v in versions)


def history_runs(records: Sequence[MemoryRecord]) -> Iterator[tuple[Sequence[MemoryRecord], bool]]:
    """An export's page in runs, in order, each with whether it is long: records whose
    earlier versions (``version`` - 1) add up to at most :data:`HISTORY_PAGE` (one
    ``Store.histories`` read a run, one a page for most users), and each record with more
    on its own, long (read a part at a time, ``Store.history_parts``: an export holds a
    part of its history, not all of it)."""
    start = held = 0
    for i, rec in enumerate(records):
        past = rec.version - 1
        if past > HISTORY_PAGE:
            if i > start:
                yield records[start:i], False
            yield records[i : i + 1], True
            start, held = i + 1, 0
        elif held + past > HISTORY_PAGE:
            yield records[start:i], False
            start, held = i, past
        else:
            held += past
    if start < len(records):
        yield records[start:], False


def end_line(count: int, past_versions: int | None = None) -> str:
    """The last line of a whole export of ``count`` records (and ``past_versions`` earlier
    versions: version 3)."""
    if past_versions is None:
        return _line({"end": "complete", "count": count})
    return _line({"end": "complete", "count": count, "past_versions": past_versions})


def failed_line(code: str, message: str) -> str:
    """The last line of an export that failed after it had started (the HTTP export)."""
    return _line({"end": "failed", "error": {"code": code, "message": message}})


# The fields of a header (version 1 also wrote "count") and of a record line; an import
# refuses any other (codec.check_fields), as it refuses an unknown field of a record (an
# end line's are checked by _check_end).
HEADER_FIELDS = frozenset(("format", "version", "embedding_model", "dims", "exported_at"))
V1_HEADER_FIELDS = HEADER_FIELDS | {"count"}
LINE_FIELDS = frozenset(("record", "embedding"))
PAST_FIELDS = frozenset(("past_version",))


def _loads(line: str) -> Any:
    """A line's JSON; a key given twice is refused (``json`` would keep the last value and
    drop the first without a word)."""
    try:
        return json_keys.loads(line)
    except json_keys.DuplicateKeyError as exc:
        raise ImportFormatError(
            f"{exc}: keep the one you mean and import again; nothing was imported"
        ) from None


def _header(line: str) -> dict[str, Any]:
    # an export saved again by an editor that writes a UTF-8 byte-order mark (Notepad,
    # PowerShell's Out-File) is still an export: the mark is dropped as utf-8-sig does
    try:
        head = _loads(line.removeprefix("\ufeff"))
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


def _check_end(item: dict[str, Any], count: int, past: int) -> None:
    """An end line: the export is whole and holds ``count`` records and ``past`` earlier
    versions, or refused. An end line without ``past_versions`` (version 2's, joined to a
    version-3 file) counts none."""
    if item.get("end") == "failed":
        error = item.get("error")
        why = error.get("message") if isinstance(error, dict) else None
        raise ImportFormatError(
            f"the export failed while it was written ({why or 'no reason given'}): it is "
            "incomplete; export again"
        )
    if item.get("end") != "complete" or not {"end", "count"} <= set(item) <= _END_FIELDS:
        raise ImportFormatError(
            'expected an end line {"end": "complete", "count": N, "past_versions": M} or a '
            "record line"
        )
    if isinstance(item["count"], bool) or item["count"] != count:
        raise ImportFormatError(
            f"the end line counts {item['count']!r} records but the export holds {count}: "
            "lines are missing or were added; export again"
        )
    told = item.get("past_versions", 0)
    if isinstance(told, bool) or told != past:
        raise ImportFormatError(
            f"the end line counts {told!r} past versions but the export holds {past}: "
            "past_version lines are missing or were added; export again"
        )


_END_FIELDS = frozenset(("end", "count", "past_versions"))


def _past_version(
    item: dict[str, Any], rec: MemoryRecord, at: int, last: int, max_chars: int
) -> MemoryRecord:
    """A ``past_version`` line checked against ``rec`` (the record of the line it follows,
    line ``at``) and ``last`` (the version of the past line before it, 0 for none)."""
    check_fields(item, PAST_FIELDS, "the line")
    v: MemoryRecord = validate_record(
        record_from_dict(item["past_version"], exact=True), max_chars=max_chars
    )
    for name in ("id", "tenant", "user"):
        if getattr(v, name) != getattr(rec, name):
            raise ImportFormatError(
                f"past_version.{name} is {getattr(v, name)!r} but the record it follows (line "
                f"{at}) has {getattr(rec, name)!r}: a past version belongs after its own "
                "record's line; move it there or remove it"
            )
    if v.version >= rec.version:
        raise ImportFormatError(
            f"past_version.version is {v.version}, not below the version of its record "
            f"(line {at}: {rec.version}): a past version is older than its record; fix the "
            "number or remove the line"
        )
    if v.version <= last:
        raise ImportFormatError(
            f"past_version.version is {v.version} after version {last}: a record's past "
            "versions go oldest first, each number once; put them in order"
        )
    return v


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


def rename_page(page: Sequence[Entry], renamed: Mapping[str, str]) -> list[Entry]:
    """``page`` with the ids in ``renamed`` replaced, each reference to them included."""
    if not renamed:
        return list(page)

    def new(old: str) -> str:
        return renamed.get(old, old)

    def moved(r: MemoryRecord) -> MemoryRecord:
        return _referring(r, new, id=new(r.id))

    return [
        e.moved(moved) if isinstance(e, Continued) else (moved(e[0]), e[1], tuple(map(moved, e[2])))
        for e in page
    ]


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


# A record of an import, with its file vector and its earlier versions (oldest first)
Item = tuple[MemoryRecord, Vector | None, tuple[MemoryRecord, ...]]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Continued:
    """A part of the earlier versions of a record with more than :data:`HISTORY_PAGE` (its
    item comes first, with none; its parts follow in order, one a page, so an import
    holds a part, not the history). ``newer`` is the version after the part's last (the
    first of the next part, which a SQL store needs to keep the last as a reverse delta:
    ``insert_history``'s ``newer``), ``None`` for the last part (after it: the record)."""

    record: MemoryRecord  # the record (its current version) the versions are of
    past: tuple[MemoryRecord, ...]
    newer: MemoryRecord | None

    def moved(self, change: Callable[[MemoryRecord], MemoryRecord]) -> Continued:
        """The part with ``change`` made to each version and to its record."""
        return Continued(
            change(self.record),
            tuple(map(change, self.past)),
            None if self.newer is None else change(self.newer),
        )


# What a page of an import holds: records with their history, and parts of a long one
Entry = Item | Continued


def read_pages(
    fp: IO[str],
    *,
    model_id: str,
    dims: int,
    max_chars: int = DEFAULT_MAX_CHARS,
    ids: set[str] | None = None,
    page_size: int = EXPORT_PAGE,
) -> Iterator[list[Entry]]:
    """Parse and check an export (version 1, 2 or 3) a page of ``page_size`` records at a
    time (fewer when their past versions reach :data:`HISTORY_PAGE`; a record with more
    comes with none, and its past versions after it in parts of :data:`HISTORY_PAGE`, one
    a page: :class:`Continued`), each with its vector
    from the file (``None`` when the line has none or the file's model is not
    ``model_id``/``dims``) and its past versions (version 3); raises
    :class:`ImportFormatError` naming the line. An export of version 2 or 3 must end with
    its end line (see the module); each end line counts the records and past versions
    since the header or the end line before it, so exports joined after their headers
    (``tail -n +2``) read as one. Pages come out as they are checked: what
    follows a page may still be refused (a bad line, no end line), so a caller writes
    nothing before the iteration has ended. ``ids`` collects the records' ids (a record id
    that appears twice is refused).

    Every record is checked field by field exactly as ``add`` checks its arguments
    (:func:`~memstrata.validation.validate_record`), so an import cannot store what
    ``add`` would refuse; so is each past version, which keeps its ``embedding_model``
    and ``embedding_dims`` (no vector of it is held)."""
    lines = iter(enumerate(fp, start=1))
    first = next(lines, None)
    if first is None:
        raise ImportFormatError("the import is empty: expected a memstrata export")
    head = _header(first[1])
    same_model = head.get("embedding_model") == model_id and head.get("dims") == dims
    seen: set[str] = set() if ids is None else ids
    page: list[Entry] = []
    held = 0  # past versions in the page
    total = 0
    version = head["version"]
    ended = version == 1  # a version-1 export has no end line
    since_end = 0  # records since the header or the last end line (exports joined)
    past_since_end = 0  # past versions since then
    # the last record read, with its vector, its past versions not yet in a page, its line
    # number, and whether it is in a page already (its history is given in parts)
    last: tuple[MemoryRecord, Vector | None, list[MemoryRecord], int, bool] | None = None

    def whole(last: tuple[MemoryRecord, Vector | None, list[MemoryRecord], int, bool]) -> Entry:
        """The entry of the last record, once its past versions are all read."""
        rec, fvec, history, _, parted = last
        return Continued(rec, tuple(history), None) if parted else (rec, fvec, tuple(history))

    for number, line in lines:
        if not line.strip():
            continue
        vec: Vector | None = None
        try:
            item = _loads(line)
            past = version >= 3 and isinstance(item, dict) and "past_version" in item
            if past:
                if last is None:
                    raise ImportFormatError(
                        "a past_version line must follow the line of its record (a past "
                        "version comes after its record's line, before the next record's); "
                        "move it there"
                    )
                older = last[2][-1].version if last[2] else 0
                last[2].append(_past_version(item, last[0], last[3], older, max_chars))
                past_since_end += 1
        except MemstrataError as exc:
            raise ImportFormatError(f"line {number}: {exc}") from None
        except (ValueError, RecursionError) as exc:
            raise ImportFormatError(f"line {number}: not valid export JSON ({exc})") from None
        if past:
            if last is not None and len(last[2]) > HISTORY_PAGE:
                # a part and the version after it (the next part's first): a page
                rec, fvec, history, at, parted = last
                if not parted:
                    page.append((rec, fvec, ()))
                page.append(Continued(rec, tuple(history[:-1]), history[-1]))
                yield page
                page, held = [], 0
                last = (rec, fvec, history[-1:], at, True)
            continue
        if last is not None:  # the record before is whole: into the page
            page.append(whole(last))
            held += len(last[2])
            last = None
            if len(page) >= page_size or held >= HISTORY_PAGE:
                yield page
                page, held = [], 0
        try:
            if version >= 2 and isinstance(item, dict) and "end" in item:
                _check_end(item, since_end, past_since_end)
                ended, since_end, past_since_end = True, 0, 0
                continue
            ended = version == 1
            if isinstance(item, dict) and "past_version" in item:
                raise ImportFormatError(
                    f"a past_version line in an export of version {version}, which has none "
                    "(they came with version 3): the file was edited or joined to another; "
                    "export again"
                )
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
        last = (replace(rec, embedding_model=model_id, embedding_dims=dims), vec, [], number, False)
        since_end += 1
        total += 1
    if last is not None:
        page.append(whole(last))
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


def remap_page(page: Sequence[Entry], into: Scope, ids: Container[str]) -> list[Entry]:
    """The records of an import into ``into``: new ids (:func:`remapped_id`), and each
    reference to a record of the same import (``ids``: every id it holds) rewritten to
    match; references to records outside it are kept. Their past versions alike."""

    def new(old: str) -> str:
        return remapped_id(old, into) if old in ids else old

    def moved(r: MemoryRecord) -> MemoryRecord:
        return _referring(
            r,
            new,
            id=remapped_id(r.id, into),
            tenant=into.tenant,
            user=into.user,
            agent=into.agent if into.agent is not None else r.agent,
        )

    return [
        e.moved(moved) if isinstance(e, Continued) else (moved(e[0]), e[1], tuple(map(moved, e[2])))
        for e in page
    ]


def spool_failed(exc: OSError) -> StoreError:
    """An import's temporary file (in ``tempfile.gettempdir()``: ``TMPDIR``) that could not
    be made or written, before anything was imported: a full disk there, most often."""
    return StoreError(
        f"the import could not write its temporary file in {tempfile.gettempdir()} ({exc}); "
        "nothing was imported: free space there (an import spools up to about twice the "
        "export's size) or set TMPDIR to a folder with room, then retry"
    )


class PageSpool(Generic[T]):
    """Pages of an import kept on disk between its passes (a temporary file, deleted when
    closed), so that an import holds a page in memory, not the file. Written and read
    back by this process only (pickle of its own values). A file that cannot be made or
    written is :func:`spool_failed`."""

    def __init__(self) -> None:
        try:
            self._file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()/__exit__
        except OSError as exc:
            raise spool_failed(exc) from exc
        self.records = 0

    def add(self, page: Sequence[T]) -> None:
        if page:
            try:
                pickle.dump(list(page), self._file, protocol=pickle.HIGHEST_PROTOCOL)
            except OSError as exc:
                raise spool_failed(exc) from exc
            self.records += len(page)

    def pages(self) -> Iterator[list[T]]:
        """Every page added, in order (from the start at each call)."""
        try:
            self._file.flush()  # the last buffered page reaches the disk only now
        except OSError as exc:
            raise spool_failed(exc) from exc
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
