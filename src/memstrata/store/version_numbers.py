"""How many versions of a record a caller may read: the number a caller is shown as ``version``.

A caller (``Scope.caller``) is shown a record's ``version`` numbered among the versions it
may read (caller28, :mod:`memstrata._async.store.caller_view`): the current version of a
record is the count of its versions whose access admitted the caller when they were current.
Caller28 read each record's whole history for it (``histories``: every version decoded into a
record), ~0.15 ms a record on SQLite, so a caller's ``list(limit=100)`` of edited records
took 15–23 ms where it took 3.5. The SQL stores keep history as reverse deltas
(:mod:`.sqlite.history`); whether a version admitted the caller depends on three of its
columns only (``status``, ``visibility``, ``access``), so :func:`readable_count` walks the
deltas back from the current row applying those three and nothing else. A delta that
changes none of them (most: an edit of the text) is not even parsed: its inflated bytes are
searched for the three keys as the encoder writes them (a key written ``"access":`` cannot
occur inside a JSON string, where a quote is escaped; one found elsewhere, a metadata key of
that name, only costs a parse).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..scope import Scope
from .sqlite.history import apply_column, delta_text

__all__ = ["WATCHED", "readable_count"]

# The columns whose value decides whether a version admitted a caller (Scope.admits; the
# tenant, user, agent and session do not change between versions or do not count for a
# caller's whole-memory scope).
WATCHED = ("status", "visibility", "access")
_KEYS = tuple(f'"{c}":'.encode() for c in WATCHED)


def _admits(scope: Scope, state: Mapping[str, Any], seen: dict[str, bool]) -> bool:
    if state["status"] != "active":
        return False
    if state["visibility"] == "public":
        return True
    text = str(state["access"])
    found = seen.get(text)
    if found is None:  # most versions of a record share one access: parsed once
        access = json.loads(text)
        users = access.get("allowed_users") or ()
        roles = access.get("allowed_roles") or ()
        found = seen[text] = scope.caller in users or not scope.roles.isdisjoint(roles)
    return found


def readable_count(row: Any, deltas: Iterable[tuple[int, bytes]], scope: Scope, upto: int) -> int:
    """The number of versions of one record, up to version ``upto``, that ``scope``'s caller
    may read (the version a caller is shown of version ``upto`` when that one admits it).
    ``row``: the current row, read by column name (its ``version`` and the :data:`WATCHED`
    columns, as stored);
    ``deltas``: ``(version, blob)`` newest first, those of the row's version or later left
    out (written after the row was read, as :func:`.sqlite.history.versions_by_id` does)."""
    state = {c: row[c] for c in WATCHED}
    current = int(row["version"])
    seen: dict[str, bool] = {}
    count = int(current <= upto and _admits(scope, state, seen))
    for version, blob in deltas:
        if version >= current:
            continue
        text = delta_text(blob)
        if any(key in text for key in _KEYS):
            delta = json.loads(text.decode("utf-8"))
            for c in WATCHED:
                if c in delta:
                    state[c] = apply_column(c, delta[c], state[c])
        count += version <= upto and _admits(scope, state, seen)
    return count
