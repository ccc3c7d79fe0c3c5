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
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..records import MemoryRecord, RecordType

__all__ = ["CITE", "cited", "cited_columns", "sqlite_rows", "sqlite_user"]

CITE = b"src:"  # how a citation row's reader and user begin in SQLite's rr (BLOBs)
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
