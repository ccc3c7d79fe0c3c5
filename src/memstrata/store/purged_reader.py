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

A purge by ids does the same for a purged fact's id in the ``superseded_by`` of the facts
of its key, in every version (:func:`superseded_fix`): they say they were superseded by a
purged record (``[purged]``), and ``rederive`` re-links the current ones.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..audit_types import PURGED, AuditEvent
from ..records import AccessControl, MemoryRecord
from .sqlite.history import apply_delta, decode_delta, encode_delta, reverse_delta

__all__ = [
    "event_reader_rows",
    "names",
    "reader_fix",
    "reader_rows",
    "rewrite_versions",
    "superseded_fix",
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
) -> tuple[dict[str, Any], list[tuple[int, bytes]]] | None:
    """A record's every version changed by ``fix`` (which changes a row, by column name, in
    place, and says whether it did), as a new version.

    ``current``: its stored row; ``deltas``: ``(version, blob)`` of its earlier versions,
    newest first. Returns the new current row (``version`` one more) and every earlier
    version's delta again (the same versions, plus the one the new version archives), or
    ``None`` when ``fix`` changed no version."""
    rows = [dict(current)]
    for version, blob in deltas:
        if version < int(current["version"]):
            rows.append(apply_delta(rows[-1], decode_delta(blob)))
    if not any([fix(row) for row in rows]):  # a list: every version is fixed
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


def superseded_fix(gone: Collection[str]) -> Callable[[dict[str, Any]], bool]:
    """A :func:`rewrite_versions` fix: a version superseded by a record of ``gone`` (purged)
    says it was superseded by a purged one (:data:`PURGED`), naming no id."""

    def fix(row: dict[str, Any]) -> bool:
        if row.get("superseded_by") not in gone:
            return False
        row["superseded_by"] = PURGED
        return True

    return fix


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
