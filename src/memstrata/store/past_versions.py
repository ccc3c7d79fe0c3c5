"""Earlier versions written back to a record (``UnitOfWork.insert_history``): what every
store checks before it writes them (the SQL stores then keep them as reverse deltas,
:func:`memstrata.store.sqlite.history.past_deltas`).

An import restores an export's history this way: the records are inserted first (their
current versions), then each one's earlier versions, oldest first, in the same
transaction. The checks hold the store's own invariants (a version belongs to one record,
versions only grow) whatever the caller passes; the import's reader has refused a file
that breaks them, naming its line (:func:`memstrata.portability.read_pages`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ValidationError
from ..records import MemoryRecord

__all__ = ["check_past", "history_key"]


def history_key(past: Sequence[MemoryRecord]) -> tuple[str, str, str]:
    """The ``(tenant, user, id)`` of the record whose earlier versions ``past`` holds."""
    first = past[0]
    return first.tenant, first.user, first.id


def check_past(past: Sequence[MemoryRecord], version: int, has_history: bool) -> None:
    """Refuse earlier versions ``past`` of a stored record at ``version`` (``has_history``:
    it has earlier versions already) that the store cannot keep as its history."""
    tenant, user, rid = history_key(past)
    if has_history:
        raise ValidationError(
            f"record {rid!r} has earlier versions already; insert_history only gives them "
            "to a record that has none (one just inserted): nothing was written"
        )
    previous = 0
    for v in past:
        if (v.tenant, v.user, v.id) != (tenant, user, rid):
            raise ValidationError(
                f"an earlier version of record {rid!r} names {v.tenant}/{v.user}/{v.id!r}: "
                "each sequence holds the versions of one record; nothing was written"
            )
        if not previous < v.version < version:
            raise ValidationError(
                f"version {v.version} of record {rid!r} is out of order: its earlier "
                f"versions go oldest first, each below the next and below the stored "
                f"version {version}; nothing was written"
            )
        previous = v.version
