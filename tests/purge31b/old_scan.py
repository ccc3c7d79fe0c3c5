"""The store purges' look-up of the records naming a purged one as it was before purge31b
(a scan of the user's rows; memory://: every record of the user), kept as the reference
the index of links is compared with (test_links_equal_scan.py). Each is a method body:
``types.MethodType`` binds it to a store for one purge. The SQL stores' functions are
lead31's code, but for the imports they need as functions."""

# ruff: noqa
# mypy: ignore-errors

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from memstrata.scope import Scope
from memstrata.store.memory import _Entry
from memstrata.store.purged_reader import without_links
from memstrata.store.postgres.store import _ROW
from memstrata.store.postgres.where import key_sql as pg_key_sql
from memstrata.store.sqlite import cites
from memstrata.store.sqlite.store import _COLS, _chunks, _seq_list
from memstrata.store.sqlite.where import key_indexes, key_sql


def sqlite_scan(
    self, c: sqlite3.Connection, scope: Scope, keys: Sequence[str], gone: set[str]
) -> int:
    """The user's records naming a record of ``gone`` (purged), in any version, say
    ``[purged]`` instead (``purged_reader.link_fix``; their archived versions cite
    none of them), with a new version (``rederive`` then re-links the current facts):
    the facts of ``keys`` (schema 12's index; any version superseded by one), and the
    records whose current version links to one or has a refreshed note (an archived
    note may name one: a scan of the user's rows, parsing only those holding such a
    field). Reads the deltas of those. How many records
    were rewritten."""
    from memstrata.store.purged_reader import link_fix, noted, past_sources_fix

    fix, past = link_fix(gone), past_sources_fix(gone)
    every, _ = key_indexes("fact", "key")
    rows: dict[int, Any] = {}
    for key in keys:
        for row in c.execute(
            f"SELECT seq, {_COLS} FROM records {every} WHERE tenant = ? AND user = ? "
            f"AND {key_sql('fact', 'key')}",
            (scope.tenant, scope.user, key),
        ).fetchall():
            rows[int(row["seq"])] = row
    named = [
        int(row["seq"])
        for row in c.execute(
            "SELECT seq, superseded_by, structured, metadata, source_ids, relations "
            "FROM records WHERE tenant = ? AND user = ? AND (superseded_by IS NOT NULL "
            "OR relations != '[]' OR instr(structured, '\"replaces\"') "
            "OR instr(structured, '\"carries_out\"') OR instr(structured, '\"promoted_key\"') "
            "OR instr(structured, '\"episode_id\"') OR instr(metadata, '\"cluster_id\"') "
            "OR instr(metadata, '\"dropped_sources\"'))",
            (scope.tenant, scope.user),
        ).fetchall()
        if int(row["seq"]) not in rows and (fix(dict(row)) or noted(row))
    ]
    for part in _chunks(named):
        sql, vals = _seq_list(part)
        for row in c.execute(f"SELECT seq, {_COLS} FROM records WHERE {sql}", vals):
            rows[int(row["seq"])] = row
    done = 0
    for seq, row in sorted(rows.items()):
        newest = self._rewrite_versions(c, row, fix, past)
        if newest is None:
            continue
        c.execute(
            "UPDATE records SET superseded_by = ?, structured = ?, metadata = ?, "
            "source_ids = ?, relations = ?, version = ? WHERE seq = ?",
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
        cites.sync(c, scope.tenant, scope.user, str(row["id"]), row, newest)  # (cites.py)
        done += 1
    return done


def postgres_scan(self, c: Any, scope: Scope, keys: Sequence[str], gone: set[str]) -> int:
    """The user's records naming a record of ``gone`` (purged), in any version, say
    ``[purged]`` instead (``purged_reader.link_fix``; their archived versions cite
    none of them), with a new version (``rederive`` then re-links the current facts):
    the facts of ``keys`` (schema 12's index; any version superseded by one), and the
    records whose current version links to one or has a refreshed note (an archived
    note may name one: a scan of the user's rows, parsing only those holding such a
    field, then locked). Reads the deltas of those. How
    many records were rewritten."""
    from memstrata.store.purged_reader import link_fix, noted, past_sources_fix

    fix, past = link_fix(gone), past_sources_fix(gone)
    rows: dict[int, Any] = {}
    for key in keys:
        name, name_args = pg_key_sql("fact", "key", key)
        for row in (
            c.execute(
                f'SELECT {_ROW} FROM records WHERE tenant = %s AND "user" = %s AND {name} '
                "ORDER BY seq FOR UPDATE",
                (scope.tenant, scope.user, *name_args),
            )
        ).fetchall():
            rows[int(row["seq"])] = row
    named = [
        int(row["seq"])
        for row in (
            c.execute(
                "SELECT seq, superseded_by, structured, metadata, source_ids, relations "
                'FROM records WHERE tenant = %s AND "user" = %s AND '
                "(superseded_by IS NOT NULL OR relations <> '[]' "
                "OR strpos(structured, '\"replaces\"') > 0 "
                "OR strpos(structured, '\"carries_out\"') > 0 "
                "OR strpos(structured, '\"promoted_key\"') > 0 "
                "OR strpos(structured, '\"episode_id\"') > 0 "
                "OR strpos(metadata, '\"cluster_id\"') > 0 "
                "OR strpos(metadata, '\"dropped_sources\"') > 0)",
                (scope.tenant, scope.user),
            )
        ).fetchall()
        if int(row["seq"]) not in rows and (fix(dict(row)) or noted(row))
    ]
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


def memory_scan(self, scope: Scope, found: list[_Entry]) -> None:
    """The user's records naming a purged one, in any version, say ``[purged]``
    instead (``superseded_by``, a fact's links, a layer's id field, a relation's
    target, a refreshed note's dropped sources; their archived versions cite none of
    them), with a new version
    (store/purged_reader.py: ``without_links``). Every version of every record of the
    user is looked at (one process's dicts)."""
    gone = {e.record.id for e in found}
    if not gone:
        return
    for entry in self._own(scope.tenant, scope.user):
        r = entry.record
        versions = [*entry.history, r]
        kept = [without_links(v, gone, past=True) for v in entry.history]
        kept.append(without_links(r, gone))
        if all(k is v for k, v in zip(kept, versions, strict=True)):
            continue
        entry.history = kept
        entry.record = replace(kept[-1], version=kept[-1].version + 1)
        self._cite(entry.record)  # a fact ended by a purged one: by [purged] now
        self._changed(r.tenant, r.user, r.id)
