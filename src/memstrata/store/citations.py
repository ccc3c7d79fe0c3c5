"""Which records a record cites, for finding the records that cite given ids by index.

A purge by ids re-derives or purges what cites a purged record (``rederive``), and rewrites
the summaries that do (``consolidation``). They found those by reading every record of the
user; each store now keeps an index of the ids its records cite, so a purge reads the
records citing what it purges (``Store.citing``), not the user's others (purge31,
docs/measurements.md, session 31).

What a record cites (:func:`cited`): its ``source_ids``, a cluster's
``structured["members"]`` and each recorded conflict's ``source_ids`` (a fact's), for every
type but a message (a turn cites nothing: its ``source_ids``, if any, name itself), and a
fact's ``superseded_by`` (the record that ended it: ``rederive`` re-links the facts a
purged record ended, ``[purged]`` once the store's purge took its id out). That is a
superset of what ``rederive`` and ``consolidation`` check (``rederive._sources``, a
summary's ``source_ids``, a fact's ``superseded_by``), so a record the index names is
checked again by them, and one it does not name cites none of the ids. The index follows
the records' current versions (as the walk it replaces read them), deleted and superseded
ones included.

- SQLite: rows of the index of readers ``rr (t, r, u, i)`` (rows only, no schema object:
  the schema must stay on the file's first page, tests/err26), :func:`sqlite_rows`;
  schema 21 fills them for what a file holds.
- PostgreSQL: a GIN index on :func:`cited`'s SQL twin ``cited_ids(type, source_ids,
  structured)`` (schema step 28).
- ``memory://``: a dict kept on write (store/memory.py).

What a version names where a store's purge by ids rewrites the record (:func:`linked`,
purge31b): its links (``superseded_by``, ``replaces``/``carries_out``, a layer's id
field, a refreshed note's ``dropped_sources``, a relation's target) and what it cites
(``source_ids``, members: an archived version loses a purged one). A purge rewrote the
records whose current version names a purged id in a link, or holds a refreshed note
(an archived note, or archived sources, may name one), found by a scan of the user's
rows; each store now finds them by index, then checks them as the scan did:

- SQLite: a link row ``(tenant, LINK + id, CITE + user, record id)`` in ``rr`` for each id
  a version names beyond what the current version cites, kept when a later version drops
  it (and for an id the current version no longer cites): every id any version named is
  in the record's citation or link rows (:func:`sqlite_link_rows`, sqlite/cites.py
  ``linking``; schema 22 writes them).
- PostgreSQL: a GIN index on ``linked_ids`` (the current version's links) and a partial
  index of the records holding a refreshed note (step 29).
- ``memory://``: a dict of the ids any version names.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..audit_types import PURGED
from ..records import MemoryRecord, RecordType

__all__ = [
    "CITE",
    "LINK",
    "cited",
    "cited_columns",
    "linked",
    "linked_columns",
    "sqlite_link_rows",
    "sqlite_rows",
    "sqlite_user",
]

CITE = b"src:"  # how a citation row's reader and user begin in SQLite's rr (BLOBs)
LINK = b"lnk:"  # how a link row's reader begins (its user: CITE + user, as a citation's)
_MESSAGE = RecordType.MESSAGE.value
_FACT = RecordType.FACT.value


def _ids(
    type_value: str,
    source_ids: Iterable[Any],
    structured: Mapping[str, Any],
    superseded_by: Any = None,
) -> tuple[str, ...]:
    if type_value == _MESSAGE:
        return ()
    ids = [str(i) for i in source_ids]
    members = structured.get("members")
    if isinstance(members, list):
        ids.extend(str(m) for m in members)
    conflicts = structured.get("conflicts")
    if isinstance(conflicts, list):
        for c in conflicts:
            if isinstance(c, dict) and isinstance(c.get("source_ids"), list):
                ids.extend(str(i) for i in c["source_ids"])
    if type_value == _FACT and superseded_by is not None:
        ids.append(str(superseded_by))
    return tuple(dict.fromkeys(ids))


def cited(record: MemoryRecord) -> tuple[str, ...]:
    """The ids ``record`` cites (module docstring), in order, once each."""
    return _ids(
        record.type.value, record.source_ids, record.content.structured, record.superseded_by
    )


def cited_columns(
    type_value: Any, source_ids: Any, structured: Any, superseded_by: Any = None
) -> tuple[str, ...]:
    """:func:`cited` of a stored row: its ``type``, its ``source_ids`` and ``structured``
    columns as JSON text, its ``superseded_by``."""
    if str(type_value) == _MESSAGE:
        return ()
    sources = json.loads(source_ids) if source_ids else []
    data = json.loads(structured) if structured else {}
    return _ids(
        str(type_value),
        sources if isinstance(sources, list) else [],
        data if isinstance(data, dict) else {},
        superseded_by,
    )


# The fields naming another record that a store's purge rewrites (purged_reader.link_fix):
# a fact's links, each layer's id field (records.ID_FIELDS), a refreshed note's dropped
# sources; and what an archived version cites (purged_reader.past_sources_fix).
_LINKS = ("replaces", "carries_out", "promoted_key", "episode_id")
_META_LINKS = ("cluster_id",)


def _strs(values: Any) -> list[str]:
    return [v for v in values if isinstance(v, str)] if isinstance(values, list) else []


def _linked(
    type_value: str,
    record_id: str,
    source_ids: list[Any],
    structured: Mapping[str, Any],
    metadata: Mapping[str, Any],
    relations: Iterable[Any],
    superseded_by: Any,
) -> tuple[str, ...]:
    ids = _strs(source_ids)
    if type_value == _MESSAGE:  # a turn's source_ids name itself
        ids = [i for i in ids if i != record_id]
    ids += _strs(structured.get("members"))
    ids += [v for k in _LINKS if isinstance(v := structured.get(k), str)]
    ids += [v for k in _META_LINKS if isinstance(v := metadata.get(k), str)]
    note = metadata.get("refreshed")
    if isinstance(note, dict):
        ids += _strs(note.get("dropped_sources"))
    ids += [t for t in relations if isinstance(t, str)]
    if isinstance(superseded_by, str):
        ids.append(superseded_by)
    return tuple(i for i in dict.fromkeys(ids) if i != PURGED)


def linked(record: MemoryRecord) -> tuple[str, ...]:
    """The ids a version of ``record`` names where a store's purge of one of them rewrites
    it (purge31b): its ``source_ids`` and a cluster's ``structured["members"]`` (an
    archived version loses them, ``purged_reader.past_sources_fix``; a turn's own id
    left out), ``superseded_by``, ``structured["replaces"]``/``["carries_out"]``, a
    layer's id field, a refreshed note's ``dropped_sources`` and the relations' targets
    (``purged_reader.link_fix``)."""
    return _linked(
        record.type.value,
        record.id,
        list(record.source_ids),
        record.content.structured,
        record.metadata,
        [r.target_id for r in record.relations],
        record.superseded_by,
    )


def _json(text: Any, empty: Any) -> Any:
    return json.loads(text) if isinstance(text, str | bytes) and text else empty


def linked_columns(row: Any) -> tuple[str, ...]:
    """:func:`linked` of a stored row (``codec.COLUMNS`` by name, JSON text columns);
    the columns that can name nothing are not parsed (most rows)."""
    structured = row["structured"]
    structured = (
        _json(structured, {})
        if isinstance(structured, str) and any(f'"{k}"' in structured for k in (*_LINKS, "members"))
        else {}
    )
    metadata = row["metadata"]
    metadata = (
        _json(metadata, {})
        if isinstance(metadata, str)
        and any(f'"{k}"' in metadata for k in (*_META_LINKS, "dropped_sources"))
        else {}
    )
    relations = row["relations"]
    pairs = _json(relations, []) if relations != "[]" else []
    pairs = pairs if isinstance(pairs, list) else []
    targets = [p[1] for p in pairs if isinstance(p, list) and len(p) == 2]
    return _linked(
        str(row["type"]),
        str(row["id"]),
        _json(row["source_ids"], []),
        structured if isinstance(structured, dict) else {},
        metadata if isinstance(metadata, dict) else {},
        targets,
        row["superseded_by"],
    )


def sqlite_user(user: str) -> bytes:
    """The ``u`` of a user's citation rows in ``rr``: a BLOB no owner's TEXT equals, so a
    purge's look-up of the owner's rows (``t, u``) never reads them."""
    return CITE + user.encode()


def sqlite_rows(
    tenant: str, user: str, record_id: str, ids: Iterable[str]
) -> list[tuple[str, bytes, bytes, str]]:
    """The rows of ``rr`` saying that record ``record_id`` cites ``ids``: ``(tenant,
    CITE + cited id, CITE + user, record_id)`` (a BLOB reader: no user reader equals one,
    store/sqlite/roles.py)."""
    u = sqlite_user(user)
    return [(tenant, CITE + i.encode(), u, record_id) for i in ids]


def sqlite_link_rows(
    tenant: str, user: str, record_id: str, ids: Iterable[str]
) -> list[tuple[str, bytes, bytes, str]]:
    """The rows of ``rr`` saying that a version of record ``record_id`` names ``ids``
    (:func:`linked`): ``(tenant, LINK + id, CITE + user, record_id)``."""
    u = sqlite_user(user)
    return [(tenant, LINK + i.encode(), u, record_id) for i in ids]
