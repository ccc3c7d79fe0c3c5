"""The PostgreSQL store purge's look-up of the records naming a purged one as it was before
pg32 (lead31/purge31b: every record of the user holding a refreshed note read, locked and
its history decoded at each purge), kept as the reference test_purge_notes.py compares
today's with. A method body: ``types.MethodType`` binds it to a store for one purge."""

# ruff: noqa
# mypy: ignore-errors

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memstrata.scope import Scope
from memstrata.store.postgres.schema import LINKED_ROWS, NOTED_ROWS
from memstrata.store.postgres.store import _ROW
from memstrata.store.postgres.where import key_sql


def noted_all(self, c: Any, scope: Scope, keys: Sequence[str], gone: set[str]) -> int:
    """The user's records naming a record of ``gone`` (purged), in any version, say
    ``[purged]`` instead (``purged_reader.link_fix``; their archived versions cite
    none of them), with a new version (``rederive`` then re-links the current facts):
    the facts of ``keys`` (schema 12's index; any version superseded by one), and the
    records whose current version links to one (step 29's GIN index on
    ``linked_ids``) or has a refreshed note (an archived note may name one: step 29's
    partial index of those), then locked (purge31b: a scan of the user's rows
    before). Reads the deltas of those. How many records were rewritten."""
    from memstrata.store.purged_reader import link_fix, noted, past_sources_fix

    fix, past = link_fix(gone), past_sources_fix(gone)
    rows: dict[int, Any] = {}
    for key in keys:
        name, name_args = key_sql("fact", "key", key)
        for row in (
            c.execute(
                f'SELECT {_ROW} FROM records WHERE tenant = %s AND "user" = %s AND {name} '
                "ORDER BY seq FOR UPDATE",
                (scope.tenant, scope.user, *name_args),
            )
        ).fetchall():
            rows[int(row["seq"])] = row
    cols = "seq, superseded_by, structured, metadata, source_ids, relations"
    found = (
        c.execute(
            f'SELECT {cols} FROM records WHERE tenant = %s AND "user" = %s AND '
            f"linked_ids(structured, metadata, relations, superseded_by) && %s::text[] "
            f"AND {LINKED_ROWS}",
            (scope.tenant, scope.user, sorted(gone)),
        )
    ).fetchall()
    found += (
        c.execute(
            f'SELECT {cols} FROM records WHERE tenant = %s AND "user" = %s AND {NOTED_ROWS}',
            (scope.tenant, scope.user),
        )
    ).fetchall()
    named = sorted(
        {
            int(row["seq"])
            for row in found
            if int(row["seq"]) not in rows and (fix(dict(row)) or noted(row))
        }
    )
    if named:  # locked, then read again: a version written since is the one rewritten
        for row in (
            c.execute(
                f"SELECT {_ROW} FROM records WHERE seq = ANY(%s) ORDER BY seq FOR UPDATE",
                (named,),
            )
        ).fetchall():
            rows[int(row["seq"])] = row
    done = 0
    for seq, row in sorted(rows.items()):
        newest = self._rewrite_versions(c, row, fix, past)
        if newest is None:
            continue
        c.execute(
            "UPDATE records SET superseded_by = %s, structured = %s, metadata = %s, "
            "source_ids = %s, relations = %s, version = %s WHERE seq = %s",
            (
                newest["superseded_by"],
                newest["structured"],
                newest["metadata"],
                newest["source_ids"],
                newest["relations"],
                newest["version"],
                seq,
            ),
        )
        done += 1
    return done
