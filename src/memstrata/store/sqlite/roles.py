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

The owner's public records are named there too (caller30, schema 19, rows only), in their
order: a record's row names as its reader :func:`public_reader`, a BLOB of :data:`PUBLIC`,
the owner, its ``observed_at`` and its ``seq`` (a role's reader begins ``role:``), so the
rows of an owner's public records lie together in ``rr``'s key in the order a listing
gives them (its time, then insertion order), and a caller's ``list`` walks them as the
owner walks their own rows, a page at a time (store/sqlite/where.py,
:func:`~memstrata.store.sqlite.where.records_from`), never the owner's other rows. They
follow the record's current ``visibility`` and ``observed_at`` (:func:`public_changed`) and
go with a purge of their record or owner as every row of the owner (``t, u, i``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from ...records import MemoryRecord, Visibility

__all__ = [
    "MARK",
    "PUBLIC",
    "changed",
    "markers",
    "public_changed",
    "public_range",
    "public_reader",
    "public_rows",
    "reader",
    "role_rows",
    "roles_of",
]

MARK = b"role:"
PUBLIC = b"public:"  # how the readers of the owner's public records begin (caller30)
Row = tuple[str, bytes, str, str]  # (tenant, reader, user, id), as rr's


def reader(role: str) -> bytes:
    """The reader ``rr`` names a role by."""
    return MARK + role.encode()


def role_rows(records: Iterable[MemoryRecord]) -> list[Row]:
    """The rows of these (current) versions: one per role each names."""
    return list(
        dict.fromkeys(
            (r.tenant, reader(role), r.user, r.id)
            for r in records
            for role in r.access.allowed_roles
        )
    )


def roles_of(access_text: str | None) -> list[str]:
    """The roles a stored ``access`` column names."""
    if not access_text or '"allowed_roles"' not in access_text:
        return []
    return [str(v) for v in json.loads(access_text).get("allowed_roles", ())]


def changed(old_access: str | None, new: MemoryRecord) -> tuple[list[Row], list[Row]]:
    """(rows to remove, rows to add) when a record's ``access`` goes from ``old_access`` to
    ``new``'s."""
    kept = set(new.access.allowed_roles)
    gone = [
        (new.tenant, reader(role), new.user, new.id)
        for role in roles_of(old_access)
        if role not in kept
    ]
    return gone, role_rows([new])


def markers(roles: Sequence[str]) -> list[bytes]:
    """The readers of these roles, in order."""
    return [reader(role) for role in sorted(roles)]


def public_reader(user: str, observed_at: str, seq: int) -> bytes:
    """The reader a public record's row names: :data:`PUBLIC`, the owner, its encoded
    ``observed_at`` and its ``seq``, each ended by a NUL (no user id nor time holds one,
    and it sorts before every other byte, so the readers sort as ``(observed_at, seq)`` do
    even were two times of unequal width)."""
    return b"%s%s\x00%s\x00%020d" % (PUBLIC, user.encode(), observed_at.encode(), seq)


def public_range(user: str) -> tuple[bytes, bytes]:
    """The readers of ``user``'s public records lie in ``[low, high)``."""
    head = PUBLIC + user.encode()
    return head + b"\x00", head + b"\x01"


def public_rows(rows: Iterable[tuple[MemoryRecord, str, int]]) -> list[Row]:
    """The rows of these (current) versions, with their encoded ``observed_at`` and
    ``seq``: one for each public one."""
    return [
        (r.tenant, public_reader(r.user, observed_at, seq), r.user, r.id)
        for r, observed_at, seq in rows
        if r.access.visibility is Visibility.PUBLIC
    ]


def public_changed(
    old_visibility: str, old_observed_at: str, new: MemoryRecord, observed_at: str, seq: int
) -> tuple[list[Row], list[Row]]:
    """(rows to remove, rows to add) when a record of ``seq`` goes from its old
    ``visibility`` and ``observed_at`` to ``new``'s (``observed_at`` encoded)."""
    gone = (
        [(new.tenant, public_reader(new.user, old_observed_at, seq), new.user, new.id)]
        if old_visibility == Visibility.PUBLIC.value
        else []
    )
    return gone, public_rows([(new, observed_at, seq)])
