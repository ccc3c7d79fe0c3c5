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

Link rows ``(tenant, LINK + id, CITE + user, record id)`` (purge31b): an id a version of
the record names where a store purge of it rewrites the record, beyond what the current
version cites (citations.linked), written with each version (:func:`insert`,
:func:`sync`, :func:`insert_versions`) and kept when a later one drops it; an id the
current version stops citing becomes one. :func:`linking` reads the citation and link
rows of the purged ids: a superset of the records the purge rewrites, which it checks as
its scan did. A purge of the record removes the rows of its current version, a rewrite
naming ``[purged]`` the rows of the purged ids (:func:`unlinked`); schema 22 writes them
for what a file holds (:func:`backfill_links`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from ...records import MemoryRecord
from ...scope import Scope
from ..citations import (
    CITE,
    LINK,
    cited,
    cited_columns,
    linked,
    linked_columns,
    sqlite_link_rows,
    sqlite_rows,
    sqlite_user,
)
from .codec import COLUMNS

__all__ = [
    "PART",
    "backfill",
    "backfill_links",
    "citing",
    "drop",
    "drop_past",
    "drop_user",
    "insert",
    "insert_versions",
    "linking",
    "sync",
    "unlinked",
]

_ADD = "INSERT OR IGNORE INTO rr VALUES (?, ?, ?, ?)"
_DEL = "DELETE FROM rr WHERE t = ? AND r = ? AND u = ? AND i = ?"
_TYPE, _SOURCES, _STRUCTURED, _SUPERSEDED = (
    COLUMNS.index(n) for n in ("type", "source_ids", "structured", "superseded_by")
)
_CHUNK = 400
_NAMES = ("type", "source_ids", "structured", "superseded_by")
_LINKED = (*_NAMES, "metadata", "relations")
PART = 2000  # records a read of schema 21's backfill


def insert(c: sqlite3.Connection, records: Iterable[MemoryRecord]) -> None:
    """The rows of these new current versions: what they cite, and what else they name
    (link rows, :func:`linking`)."""
    rows = []
    for r in records:
        ids = cited(r)
        rows += sqlite_rows(r.tenant, r.user, r.id, ids)
        has = set(ids)
        rows += sqlite_link_rows(r.tenant, r.user, r.id, [i for i in linked(r) if i not in has])
    c.executemany(_ADD, rows)


def insert_versions(c: sqlite3.Connection, versions: Iterable[MemoryRecord]) -> None:
    """The link rows of these archived versions (written as deltas: a load, a unit of
    work's history): every id each names (:func:`linking`)."""
    c.executemany(
        _ADD, [x for v in versions for x in sqlite_link_rows(v.tenant, v.user, v.id, linked(v))]
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
    name) go from ``old`` to ``new``: the ids it no longer cites leave, the new ones come;
    the ids ``new`` names beyond what it cites, and those ``old`` cited and ``new`` does
    not, get a link row (kept: an archived version names them, :func:`linking`)."""
    if all(_column(old, n) == _column(new, n) for n in _LINKED):
        return  # the same columns: the same ids (most writes: a touch, an importance)
    now = _of(new)
    kept = set(now)
    if any(_column(old, n) != _column(new, n) for n in _NAMES):
        was = _of(old)
        had = set(was)
        gone = sqlite_rows(tenant, user, record_id, [i for i in was if i not in kept])
        came = sqlite_rows(tenant, user, record_id, [i for i in now if i not in had])
        if gone:
            c.executemany(_DEL, gone)
        if came:
            c.executemany(_ADD, came)
        left = [i for i in was if i not in kept]
    else:
        left = []
    named = [i for i in linked_columns(_Named(new, record_id)) if i not in kept]
    links = sqlite_link_rows(tenant, user, record_id, list(dict.fromkeys([*named, *left])))
    if links:
        c.executemany(_ADD, links)


class _Named:
    """A stored row (a mapping by name, or a tuple in ``codec.COLUMNS`` order) read by
    name, its ``id`` given."""

    def __init__(self, row: Any, record_id: str) -> None:
        self.row, self.id = row, record_id

    def __getitem__(self, name: str) -> Any:
        return self.id if name == "id" else _column(self.row, name)


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
    ``structured``, ``superseded_by``, ``metadata``, ``relations`` columns by name): what
    their current versions cite and name. A link row only an archived version made stays
    (a look-up of its id finds no record: :func:`linking` reads the records it names)."""
    c.executemany(
        _DEL,
        [
            x
            for r in rows
            for x in (
                *sqlite_rows(tenant, user, r["id"], _of(r)),
                *sqlite_link_rows(tenant, user, r["id"], linked_columns(r)),
            )
        ],
    )


def drop_past(c: sqlite3.Connection, tenant: str, user: str, rows: Iterable[Any]) -> None:
    """The link rows the archived versions of these records made (a purge of them, before
    it deletes their history: rows by name with ``seq``, ``version`` and the columns of
    :func:`drop`): every id a version cited or named. Only those columns are rewound from
    the deltas (the text and the rest are not rebuilt); the cost follows the purged
    records' versions, not the user's other rows (mem34: they stayed, naming the purged
    record, until the user was purged)."""
    from .history import apply_column, decode_delta

    out: list[tuple[str, bytes, bytes, str]] = []
    for r in rows:
        row = {n: r[n] for n in ("id", *_LINKED)}
        ids: dict[str, None] = {}
        for version, blob in c.execute(
            "SELECT version, delta FROM record_history WHERE seq = ? ORDER BY version DESC",
            (int(r["seq"]),),
        ):
            if int(version) >= int(r["version"]):
                continue
            delta = decode_delta(bytes(blob))
            row = {
                n: apply_column(n, delta[n], v) if n in delta and delta[n][0] != "hash" else v
                for n, v in row.items()
            }
            ids.update(dict.fromkeys(_of(row)))
            ids.update(dict.fromkeys(linked_columns(row)))
        out += sqlite_link_rows(tenant, user, str(r["id"]), ids)
    if out:
        c.executemany(_DEL, out)


def unlinked(
    c: sqlite3.Connection, tenant: str, user: str, record_id: str, ids: Iterable[str]
) -> None:
    """The link rows of ``ids`` of a record a purge rewrote: no version names them now."""
    c.executemany(_DEL, sqlite_link_rows(tenant, user, record_id, ids))


def linking(c: sqlite3.Connection, scope: Scope, ids: Sequence[str]) -> list[str]:
    """The ids of the records of ``scope``'s user a version of which may name one of
    ``ids`` where a purge of it rewrites the record (citations.linked): every such
    record is among them (a superset: a link row stays once a version named the id).
    The rows of ``ids`` by ``rr``'s key, citation and link rows: the cost follows the
    records naming them, not the user's others (purge31b)."""
    u = sqlite_user(scope.user)
    wanted = sorted(set(ids))
    found: set[str] = set()
    for at in range(0, len(wanted), _CHUNK // 2):
        part = wanted[at : at + _CHUNK // 2]
        keys = [CITE + i.encode() for i in part] + [LINK + i.encode() for i in part]
        marks = ", ".join("?" * len(keys))
        found.update(
            str(i)
            for (i,) in c.execute(
                f"SELECT i FROM rr WHERE t = ? AND r IN ({marks}) AND u = ?",
                [scope.tenant, *keys, u],
            )
        )
    return sorted(found)


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


def backfill_links(c: sqlite3.Connection) -> None:
    """Schema 22 (purge31b): the link rows of every record a file holds, as the writes of
    its versions, oldest first, would have made them (:func:`insert`, :func:`sync`): what
    each version names beyond what it cites, and what a version cited that the next one
    does not (its deltas applied from the current row back). :data:`PART` records a read
    (by ``seq``), in the step's one transaction."""
    from .history import apply_delta, decode_delta

    cols = ", ".join(COLUMNS)
    last = 0
    while rows := c.execute(
        f"SELECT seq, {cols} FROM records WHERE seq > ? ORDER BY seq LIMIT ?", (last, PART)
    ).fetchall():
        last = int(rows[-1][0])
        deltas: dict[int, list[tuple[int, bytes]]] = {}
        for seq, version, blob in c.execute(
            "SELECT seq, version, delta FROM record_history WHERE seq BETWEEN ? AND ? "
            "ORDER BY seq, version DESC",
            (int(rows[0][0]), last),
        ):
            deltas.setdefault(int(seq), []).append((int(version), bytes(blob)))
        out: list[tuple[str, bytes, bytes, str]] = []
        for row in rows:
            versions = [dict(zip(COLUMNS, row[1:], strict=True))]  # newest first
            for v, blob in deltas.get(int(row[0]), []):
                if v < int(versions[0]["version"]):
                    versions.append(apply_delta(versions[-1], decode_delta(blob)))
            ids: dict[str, None] = {}
            before: tuple[str, ...] = ()
            for version in reversed(versions):
                now = _of(version)
                kept = set(now)
                ids.update(dict.fromkeys(i for i in linked_columns(version) if i not in kept))
                ids.update(dict.fromkeys(i for i in before if i not in kept))
                before = now
            current = versions[0]
            out += sqlite_link_rows(
                str(current["tenant"]), str(current["user"]), str(current["id"]), list(ids)
            )
        if out:
            c.executemany(_ADD, out)
