"""A purged user's id taken out of what other users shared with them (a whole-user purge).

Another user's record may name the purged user in its ``access.allowed_users``, in its
current version and in earlier ones. The purge keeps the record (it is the other user's)
and every other reader, and takes the id out of every version; a record whose only reader
was the purged user keeps its visibility (its owner chose it) and is read by nobody else
until its owner shares it again. So a user created later with the same id (a recycled
address) reads nothing that was shared with the purged one, and no byte of the id is left
in the record or its history.

The record gets a new version (its ``updated_at`` kept): a write based on the version read
before the purge (a ``set_access`` keeping the readers it read, a maintenance pass
rewriting the record) is refused with a ``ConflictError`` instead of writing the id back.

The SQL stores keep rows (``codec.COLUMNS``) and reverse deltas (``sqlite/history.py``):
:func:`rewrite_versions` rebuilds a record's every version from its row and deltas, takes
the id out of each (:func:`reader_fix`) and encodes the chain again. Which records to
rewrite, and which events to redact, the purge reads from the index of readers: a row per
record a version of which, or a ``set_access`` event of which, names the reader (SQLite:
``rr (t, r, u, i)``, ``i`` a record id or an event's seq, schema 16; PostgreSQL:
``record_readers (tenant, reader, user, id)``, step 20, events found by the partial index
``audit_log_set_access``). So a purge reads the rows of what was shared with the user, those
records' chains and those events: its cost follows what was shared with them, not the
tenant's size (docs/measurements.md, session 27, purgeidx27). Every version written adds its
rows in its transaction: SQLite's record writes (``_insert_rows``, ``_replace``,
``dump.load_records``, ``dump.insert_history``) call :func:`reader_rows`, its audit append
indexes each ``set_access`` event by seq (no trigger: the schema must stay on the file's
first page, tests/err26); PostgreSQL's trigger on ``records`` adds a current row's (an
insert, a COPY, an update of ``access``), and versions written as deltas and loaded events
add theirs (:func:`reader_rows`, :func:`event_reader_rows`). A row goes only with a purge:
of its reader, of its owner, or (a version's row, not an event's) of its record.
``memory://`` has no index: its purge walks the store's entries anyway (the user's own
records, cache and jobs).

A purge by ids does the same for a purged record's id in what the user's other records say
of it, in every version (:func:`link_fix`, :func:`without_links`): the ``superseded_by`` of
the facts of its key and of another key's fact it ended (a plan carried out, a holder's
value), a fact's ``structured["replaces"]`` (the value it replaced; its id also leaves the
fact's ``source_ids``, where it stood as a link, not a turn) and ``["carries_out"]`` (the
plan), a layer's id field (``records.ID_FIELDS``), a ``similar_to`` relation's target, and
a re-derived record's ``metadata["refreshed"]["dropped_sources"]``: each says
``[purged]``, what the record was (superseded, a replacement, re-derived without two
sources) without which record. An archived version's ``source_ids`` (and a cluster's
``structured["members"]``) lose the purged ids (``past``): the current version's are
``rederive``'s, which re-derives the record from the sources left. ``rederive`` then
re-links the current facts. Found by the record's current version: one naming a purged
record, or holding a refreshed note (:func:`noted`: an archived note may name one), among
those an index names (store/citations.py, purge31b; a scan of the user's rows before). An id
that only an archived version of a record never refreshed names is not found.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..audit_types import PURGED, AuditEvent
from ..records import ID_FIELDS, AccessControl, MemoryRecord, Relation
from .sqlite.history import apply_delta, decode_delta, encode_delta, reverse_delta

__all__ = [
    "event_reader_rows",
    "link_fix",
    "names",
    "noted",
    "past_sources_fix",
    "reader_fix",
    "reader_rows",
    "rewrite_versions",
    "without_links",
    "without_reader",
    "without_superseded",
]

_JSON = {"ensure_ascii": False, "sort_keys": True, "separators": (",", ":")}


def _needle(user: str) -> str:
    return json.dumps(user, ensure_ascii=False)


def names(access_text: str, user: str) -> bool:
    """Whether an ``access`` column (JSON text) lists ``user`` among its readers."""
    if _needle(user) not in access_text:  # most rows: no JSON parse
        return False
    return user in json.loads(access_text).get("allowed_users", ())


ReaderRow = tuple[str, str, str, str]  # (tenant, reader, user, id)


def reader_rows(records: Iterable[MemoryRecord]) -> list[ReaderRow]:
    """The index rows of these versions: one per reader each names (no duplicates)."""
    return list(
        dict.fromkeys((r.tenant, u, r.user, r.id) for r in records for u in r.access.allowed_users)
    )


def event_reader_rows(events: Iterable[AuditEvent]) -> list[ReaderRow]:
    """The index rows of these events: a set_access event of a user names, for each of its
    record ids, each reader in ``details.allowed_users``."""
    out: dict[ReaderRow, None] = {}
    for e in events:
        readers = e.details.get("allowed_users") if e.action == "set_access" else None
        if e.user is None or not isinstance(readers, list):
            continue
        for u in readers:
            for rid in e.record_ids:
                out[(e.tenant, str(u), e.user, rid)] = None
    return list(out)


def _access_without(access_text: str, user: str) -> str:
    access = json.loads(access_text)
    access["allowed_users"] = [u for u in access.get("allowed_users", ()) if u != user]
    return json.dumps(access, **_JSON)  # type: ignore[arg-type]


def rewrite_versions(
    current: Mapping[str, Any],
    deltas: Sequence[tuple[int, bytes]],
    fix: Callable[[dict[str, Any]], bool],
    past: Callable[[dict[str, Any]], bool] | None = None,
) -> tuple[dict[str, Any], list[tuple[int, bytes]]] | None:
    """A record's every version changed by ``fix`` (which changes a row, by column name, in
    place, and says whether it did), as a new version.

    ``current``: its stored row; ``deltas``: ``(version, blob)`` of its earlier versions,
    newest first. Returns the new current row (``version`` one more) and every earlier
    version's delta again (the same versions, plus the one the new version archives), or
    ``None`` when ``fix`` changed no version. ``past``: a fix of the archived versions only
    (after ``fix``)."""
    rows = [dict(current)]
    for version, blob in deltas:
        if version < int(current["version"]):
            rows.append(apply_delta(rows[-1], decode_delta(blob)))
    changed = [fix(row) for row in rows]  # a list: every version is fixed
    if past is not None:
        changed += [past(row) for row in rows[1:]]
    if not any(changed):
        return None
    newest = {**rows[0], "version": int(current["version"]) + 1}
    chain = [newest, *rows]  # newest first
    out = [
        (int(old["version"]), encode_delta(reverse_delta(old, newer)))
        for newer, old in zip(chain, chain[1:], strict=False)
    ]
    return newest, out


def reader_fix(user: str) -> Callable[[dict[str, Any]], bool]:
    """A :func:`rewrite_versions` fix: a version naming ``user`` among its readers is read
    without them."""

    def fix(row: dict[str, Any]) -> bool:
        if not names(str(row["access"]), user):
            return False
        row["access"] = _access_without(str(row["access"]), user)
        return True

    return fix


# The fields naming another record: a fact's links, and each layer's id field
# (records.ID_FIELDS: a key entry's cluster, a cluster's promoted key, a task's episode).
_LINKS = (
    "replaces",
    "carries_out",
    *(name for where, name in ID_FIELDS.values() if where == "structured"),
)
_META_LINKS = tuple(name for where, name in ID_FIELDS.values() if where == "metadata")


def _purged(value: object, gone: Collection[str]) -> bool:
    return isinstance(value, str) and value in gone


def _structured_without(data: Mapping[str, Any], gone: Collection[str]) -> dict[str, Any] | None:
    """``data`` (a ``structured``) with :data:`PURGED` for a link to a record of ``gone``;
    ``None`` when it names none."""
    if not any(_purged(data.get(link), gone) for link in _LINKS):
        return None
    return {k: PURGED if k in _LINKS and _purged(v, gone) else v for k, v in data.items()}


def _metadata_without(meta: Mapping[str, Any], gone: Collection[str]) -> dict[str, Any] | None:
    """``meta`` with :data:`PURGED` for each id of ``gone`` its refreshed note dropped and
    for an id field naming one; ``None`` when it names none."""
    out: dict[str, Any] | None = None
    note = meta.get("refreshed")
    dropped = note.get("dropped_sources") if isinstance(note, dict) else None
    if isinstance(dropped, list) and any(_purged(i, gone) for i in dropped):
        marked = [PURGED if _purged(i, gone) else i for i in dropped]
        out = {**meta, "refreshed": {**note, "dropped_sources": marked}}  # type: ignore[dict-item]
    for link in _META_LINKS:
        if _purged(meta.get(link), gone):
            out = {**(out or meta), link: PURGED}
    return out


def _relations_without(pairs: Any, gone: Collection[str]) -> list[Any] | None:
    """A row's ``relations`` (``[[kind, target], ...]``) with :data:`PURGED` for a target
    in ``gone``; ``None`` when none is."""
    if not isinstance(pairs, list) or not any(
        isinstance(p, list) and len(p) == 2 and _purged(p[1], gone) for p in pairs
    ):
        return None
    return [
        [p[0], PURGED] if isinstance(p, list) and len(p) == 2 and _purged(p[1], gone) else p
        for p in pairs
    ]


def _loaded(text: object, *keys: str) -> dict[str, Any] | None:
    """A JSON object column that may hold one of ``keys`` (most rows are not parsed)."""
    if not isinstance(text, str) or not any(f'"{key}"' in text for key in keys):
        return None
    data = json.loads(text)
    return data if isinstance(data, dict) else None


def link_fix(gone: Collection[str]) -> Callable[[dict[str, Any]], bool]:
    """A :func:`rewrite_versions` fix: a version naming a record of ``gone`` (purged) in
    ``superseded_by``, ``structured["replaces"]``/``["carries_out"]`` or its refreshed
    note's ``dropped_sources`` says :data:`PURGED` instead; a replaced value's id also
    leaves ``source_ids`` (module docstring)."""

    def fix(row: dict[str, Any]) -> bool:
        changed = False
        if _purged(row.get("superseded_by"), gone):
            row["superseded_by"] = PURGED
            changed = True
        data = _loaded(row.get("structured"), *_LINKS)
        new = _structured_without(data, gone) if data is not None else None
        if data is not None and new is not None:
            row["structured"] = json.dumps(new, **_JSON)  # type: ignore[arg-type]
            link = data.get("replaces")
            if _purged(link, gone):
                ids = json.loads(str(row["source_ids"]))
                row["source_ids"] = json.dumps([i for i in ids if i != link], **_JSON)  # type: ignore[arg-type]
            changed = True
        meta = _loaded(row.get("metadata"), "dropped_sources", *_META_LINKS)
        marked = _metadata_without(meta, gone) if meta is not None else None
        if marked is not None:
            row["metadata"] = json.dumps(marked, **_JSON)  # type: ignore[arg-type]
            changed = True
        text = row.get("relations")
        pairs = json.loads(text) if isinstance(text, str) and text != "[]" else None
        relations = _relations_without(pairs, gone)
        if relations is not None:
            row["relations"] = json.dumps(relations, **_JSON)  # type: ignore[arg-type]
            changed = True
        return changed

    return fix


def noted(row: Mapping[str, Any]) -> bool:
    """Whether a row's ``metadata`` holds a refreshed note's dropped sources: an archived
    version's note (one a later refresh replaced) may name a purged record, so its every
    version is read (a record never refreshed holds none)."""
    return '"dropped_sources"' in str(row["metadata"])


def past_sources_fix(gone: Collection[str]) -> Callable[[dict[str, Any]], bool]:
    """A :func:`rewrite_versions` ``past`` fix: an archived version cites no record of
    ``gone`` (``source_ids``, a cluster's ``structured["members"]``)."""

    def fix(row: dict[str, Any]) -> bool:
        changed = False
        ids = json.loads(str(row["source_ids"]))
        if any(_purged(i, gone) for i in ids):
            row["source_ids"] = json.dumps([i for i in ids if not _purged(i, gone)], **_JSON)  # type: ignore[arg-type]
            changed = True
        data = _loaded(row.get("structured"), "members")
        members = data.get("members") if data is not None else None
        if isinstance(members, list) and any(_purged(m, gone) for m in members):
            kept = [m for m in members if not _purged(m, gone)]
            row["structured"] = json.dumps({**data, "members": kept}, **_JSON)  # type: ignore[arg-type,dict-item]
            changed = True
        return changed

    return fix


def without_links(
    record: MemoryRecord, gone: Collection[str], *, past: bool = False
) -> MemoryRecord:
    """``record`` (a version) as :func:`link_fix` (and with ``past``,
    :func:`past_sources_fix`) makes it; the same record when it names no record of
    ``gone``."""
    out = without_superseded(record, gone)
    data = record.content.structured
    structured = _structured_without(data, gone)
    if structured is not None:
        link = data.get("replaces")
        ids = tuple(i for i in out.source_ids if not (_purged(link, gone) and i == link))
        out = replace(out, content=replace(out.content, structured=structured), source_ids=ids)
    meta = _metadata_without(record.metadata, gone)
    if meta is not None:
        out = replace(out, metadata=meta)
    if any(r.target_id in gone for r in out.relations):
        related = tuple(
            Relation(r.kind, PURGED) if r.target_id in gone else r for r in out.relations
        )
        out = replace(out, relations=related)
    if past:
        if any(i in gone for i in out.source_ids):
            out = replace(out, source_ids=tuple(i for i in out.source_ids if i not in gone))
        members = out.content.structured.get("members")
        if isinstance(members, list) and any(_purged(m, gone) for m in members):
            kept = [m for m in members if not _purged(m, gone)]
            structured = {**out.content.structured, "members": kept}
            out = replace(out, content=replace(out.content, structured=structured))
    return out


def without_superseded(record: MemoryRecord, gone: Collection[str]) -> MemoryRecord:
    """``record`` (a version) with :data:`PURGED` for a ``superseded_by`` in ``gone``."""
    if record.superseded_by is None or record.superseded_by not in gone:
        return record
    return replace(record, superseded_by=PURGED)


def without_reader(record: MemoryRecord, user: str) -> MemoryRecord:
    """``record`` with ``user`` out of its readers (the same record when not among them)."""
    access = record.access
    if user not in access.allowed_users:
        return record
    kept = tuple(u for u in access.allowed_users if u != user)
    return replace(
        record,
        access=AccessControl(access.visibility, kept, access.allowed_roles),
    )
