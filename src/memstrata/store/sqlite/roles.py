"""The records of a user shared with a role, found without reading the user's other rows.

A caller with roles reads the owner's records whose ``access.allowed_roles`` names one of
its roles. SQLite has no index of ``access`` (and the schema no room for one on the file's
first page, tests/err26), so they were found by a scan of the owner's rows: a caller's
search cost, and its time told, how many records the owner kept unshared (caller29 left
it). They are named instead in the index of readers (``rr (t, r, u, i)``, schema 16,
store/purged_reader.py) under a reader no user can be: :func:`reader`, a BLOB (``role:``
and the role's UTF-8), where a user reader is TEXT (SQLite never finds a BLOB equal to a
TEXT, so no purge, reader lookup or check of the index of readers by a user id meets one;
a NUL prefix would not do: SQLite's text functions stop at a NUL). Rows only, no schema
object (schema 18 fills them for what a file holds).

Unlike a user reader's rows (kept for every version, for a purge), a role's rows follow the
record's current ``access`` only: a write adds the rows of its new roles and removes those of
the roles it dropped (:func:`changed`), so what a caller with roles reads is ∝ what is shared
with its roles now (active or not: a deleted record's rows stay, the caller's rule drops
it). They go with a purge of their record or owner as every row of the owner (``t, u``).

The owner's public records are named there too (caller30, schema 19, rows only), under
:data:`PUBLIC` (a BLOB no role's reader is: those begin ``role:``), following the record's
current ``visibility`` as a role's rows follow its roles: a caller's ``list`` reads what it
may read through these rows and its own (store/sqlite/where.py, :func:`~memstrata.store.
sqlite.where.records_from`), not the owner's other rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from ...records import MemoryRecord, Visibility

__all__ = ["MARK", "PUBLIC", "changed", "markers", "reader", "role_rows", "roles_of"]

MARK = b"role:"
PUBLIC = b"public"  # the reader naming the owner's public records (caller30)
Row = tuple[str, bytes, str, str]  # (tenant, reader, user, id), as rr's


def reader(role: str) -> bytes:
    """The reader ``rr`` names a role by."""
    return MARK + role.encode()


def role_rows(records: Iterable[MemoryRecord]) -> list[Row]:
    """The rows of these (current) versions: one per role each names, and :data:`PUBLIC`'s
    for a public one."""
    rows: dict[Row, None] = {}
    for r in records:
        for role in r.access.allowed_roles:
            rows[r.tenant, reader(role), r.user, r.id] = None
        if r.access.visibility is Visibility.PUBLIC:
            rows[r.tenant, PUBLIC, r.user, r.id] = None
    return list(rows)


def roles_of(access_text: str | None) -> list[str]:
    """The roles a stored ``access`` column names."""
    if not access_text or '"allowed_roles"' not in access_text:
        return []
    return [str(v) for v in json.loads(access_text).get("allowed_roles", ())]


def changed(
    old_access: str | None, old_visibility: str | None, new: MemoryRecord
) -> tuple[list[Row], list[Row]]:
    """(rows to remove, rows to add) when a record's ``access`` goes from ``old_access`` to
    ``new``'s (and its ``visibility`` from ``old_visibility``)."""
    kept = set(new.access.allowed_roles)
    gone = [
        (new.tenant, reader(role), new.user, new.id)
        for role in roles_of(old_access)
        if role not in kept
    ]
    if old_visibility == Visibility.PUBLIC.value and new.access.visibility is not Visibility.PUBLIC:
        gone.append((new.tenant, PUBLIC, new.user, new.id))
    return gone, role_rows([new])


def markers(roles: Sequence[str]) -> list[bytes]:
    """The readers of these roles, in order."""
    return [reader(role) for role in sorted(roles)]
