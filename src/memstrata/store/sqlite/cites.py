"""SQLite's index of citations: which records cite an id, from rows of ``rr`` (purge31).

A row ``(tenant, CITE + cited id, CITE + user, citing record id)`` says that the current
version of the user's record cites that id (store/citations.py). Rows only, no schema
object (the schema must stay on the file's first page, tests/err26). The reader and the
user are BLOBs: no user reader (TEXT), role or public reader (``role:``, ``public:``,
store/sqlite/roles.py) equals one, and a look-up of an owner's rows (``t, u``: a purge's
delete of a purged record's reader rows, ``rr_u``) never reads them. A citing record's
rows follow its current version: a write adds the ids it cites now and removes those it
no longer does (:func:`sync`), a purge of it removes its rows (:func:`drop`), a purge of
the user every row of theirs. :func:`citing` reads the rows of the ids asked for by
``rr``'s key, then those records' ``observed_at`` and ``seq``: its cost follows the
records citing them, not the user's others. Schema 21 writes the rows of what a file
holds (migrations.py, :func:`backfill`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from ...records import MemoryRecord
from ...scope import Scope
from ..citations import CITE, cited, cited_columns, sqlite_rows, sqlite_user
from .codec import COLUMNS

__all__ = ["PART", "backfill", "citing", "drop", "drop_user", "insert", "sync"]

_ADD = "INSERT OR IGNORE INTO rr VALUES (?, ?, ?, ?)"
_DEL = "DELETE FROM rr WHERE t = ? AND r = ? AND u = ? AND i = ?"
_TYPE, _SOURCES, _STRUCTURED, _SUPERSEDED = (
    COLUMNS.index(n) for n in ("type", "source_ids", "structured", "superseded_by")
)
_CHUNK = 400
_NAMES = ("type", "source_ids", "structured", "superseded_by")
PART = 2000  # records a read of schema 21's backfill


def insert(c: sqlite3.Connection, records: Iterable[MemoryRecord]) -> None:
    """The rows of these new current versions."""
    c.executemany(
        _ADD, [row for r in records for row in sqlite_rows(r.tenant, r.user, r.id, cited(r))]
    )


def sync(
    c: sqlite3.Connection,
    tenant: str,
    user: str,
    record_id: str,
    old: Any,
    new: Any,
) -> None:
    """A record's rows once its stored columns (``codec.COLUMNS`` order, or a mapping by
    name) go from ``old`` to ``new``: the ids it no longer cites leave, the new ones come."""
    if all(_column(old, n) == _column(new, n) for n in _NAMES):
        return  # the same columns: the same ids (most writes: a touch, an importance)
    was, now = _of(old), _of(new)
    kept, had = set(now), set(was)
    gone = sqlite_rows(tenant, user, record_id, [i for i in was if i not in kept])
    came = sqlite_rows(tenant, user, record_id, [i for i in now if i not in had])
    if gone:
        c.executemany(_DEL, gone)
    if came:
        c.executemany(_ADD, came)


def _column(row: Any, name: str) -> Any:
    if isinstance(row, dict) or hasattr(row, "keys"):
        return row[name]
    return row[COLUMNS.index(name)]


def _of(row: Any) -> tuple[str, ...]:
    if isinstance(row, dict) or hasattr(row, "keys"):
        return cited_columns(
            row["type"], row["source_ids"], row["structured"], row["superseded_by"]
        )
    return cited_columns(row[_TYPE], row[_SOURCES], row[_STRUCTURED], row[_SUPERSEDED])


def drop(c: sqlite3.Connection, tenant: str, user: str, rows: Iterable[Any]) -> None:
    """The rows of these purged records (``id``, ``type``, ``source_ids``,
    ``structured``, ``superseded_by`` columns by name)."""
    c.executemany(_DEL, [x for r in rows for x in sqlite_rows(tenant, user, r["id"], _of(r))])


def drop_user(c: sqlite3.Connection, tenant: str, user: str) -> None:
    """Every row of a purged user (``rr_u``)."""
    c.execute("DELETE FROM rr WHERE t = ? AND u = ?", (tenant, sqlite_user(user)))


def citing(c: sqlite3.Connection, scope: Scope, ids: Sequence[str]) -> list[str]:
    """The ids of the records of ``scope``'s user whose current version cites one of
    ``ids`` (deleted and superseded ones included), in their listing's order
    (``observed_at``, ``seq``)."""
    from .where import scope_sql

    u = sqlite_user(scope.user)
    wanted = sorted(set(ids))
    found: set[str] = set()
    for at in range(0, len(wanted), _CHUNK):
        part = wanted[at : at + _CHUNK]
        marks = ", ".join("?" * len(part))
        found.update(
            str(i)
            for (i,) in c.execute(
                f"SELECT i FROM rr WHERE t = ? AND r IN ({marks}) AND u = ?",
                [scope.tenant, *(CITE + i.encode() for i in part), u],
            )
        )
    where, args = scope_sql(scope)
    rows: list[tuple[str, str, int]] = []
    names = sorted(found)
    for at in range(0, len(names), _CHUNK):
        part = names[at : at + _CHUNK]
        marks = ", ".join("?" * len(part))
        rows += c.execute(
            f"SELECT id, observed_at, seq FROM records WHERE id IN ({marks}) AND {where}",
            [*part, *args],
        ).fetchall()
    return [str(r[0]) for r in sorted(rows, key=lambda r: (r[1], r[2]))]


def backfill(c: sqlite3.Connection) -> None:
    """Schema 21: the rows of every record a file holds (but turns), :data:`PART` records
    a read (by ``seq``, the table's key: no read of the whole table at once), in the step's
    one transaction (a kill leaves the file as it was)."""
    last = 0
    part = PART
    while rows := c.execute(
        "SELECT seq, tenant, user, id, type, source_ids, structured, superseded_by FROM records "
        "WHERE seq > ? AND type != 'message' ORDER BY seq LIMIT ?",
        (last, part),
    ).fetchall():
        last = int(rows[-1][0])
        c.executemany(
            _ADD,
            [
                x
                for _, t, u, i, ty, s, st, sup in rows
                for x in sqlite_rows(str(t), str(u), str(i), cited_columns(ty, s, st, sup))
            ],
        )
