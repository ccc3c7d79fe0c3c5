"""What a full scan finds, to compare with the index of readers (store/purged_reader.py):
``(tenant, reader, user, id)`` for every version of every record naming the reader and
every set_access event of a user naming them."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from memstrata.store.sqlite.codec import COLUMNS
from memstrata.store.sqlite.history import apply_delta, decode_delta

Row = tuple[str, str, str, str]
_COLS = ", ".join(f'"{c}"' if c == "user" else c for c in COLUMNS)


def _versions(current: dict[str, Any], blobs: list[bytes]) -> list[dict[str, Any]]:
    rows = [current]
    for blob in blobs:
        rows.append(apply_delta(rows[-1], decode_delta(blob)))
    return rows


def _named(rows: list[dict[str, Any]]) -> set[Row]:
    return {
        (r["tenant"], u, r["user"], r["id"])
        for r in rows
        for u in json.loads(str(r["access"]))["allowed_users"]
    }


def _events(events: list[tuple[Any, ...]]) -> set[Row]:
    out: set[Row] = set()
    for tenant, user, rids, details in events:
        for reader in json.loads(details).get("allowed_users", []):
            for rid in json.loads(rids) if isinstance(rids, str) else rids:
                out.add((tenant, reader, user, rid))
    return out


def sqlite_scan(conn: sqlite3.Connection) -> tuple[set[Row], set[Row]]:
    """(the index's rows, what a scan finds) of a SQLite file."""
    found: set[Row] = set()
    for seq, *values in conn.execute(f"SELECT seq, {_COLS} FROM records").fetchall():
        blobs = [
            bytes(b)
            for (b,) in conn.execute(
                "SELECT delta FROM record_history WHERE seq = ? ORDER BY version DESC", (seq,)
            )
        ]
        found |= _named(_versions(dict(zip(COLUMNS, values, strict=True)), blobs))
    found |= _events(
        conn.execute(
            "SELECT tenant, user, record_ids, details FROM audit_log "
            "WHERE action = 'set_access' AND user IS NOT NULL"
        ).fetchall()
    )
    # rr: a text i is a record id, an integer i the seq of a set_access event (its record)
    index: set[Row] = set()
    # (a BLOB reader is a role a record is shared with now: role29's rows for a caller's
    # search, store/sqlite/roles.py, not a reader a purge looks for)
    for t, r, u, i in conn.execute("SELECT t, r, u, i FROM rr WHERE typeof(r) = 'text'"):
        if isinstance(i, int):
            (rids,) = conn.execute(
                "SELECT record_ids FROM audit_log WHERE seq = ?", (i,)
            ).fetchone()
            index |= {(t, r, u, rid) for rid in json.loads(rids)}
        else:
            index.add((t, r, u, i))
    return index, found


def pg_scan(conn: Any) -> tuple[set[Row], set[Row]]:
    """The same for a PostgreSQL schema (``conn``: a psycopg connection, dict rows)."""
    found: set[Row] = set()
    for r in conn.execute(f"SELECT seq, {_COLS} FROM records").fetchall():
        blobs = [
            bytes(d["delta"])
            for d in conn.execute(
                "SELECT delta FROM record_history WHERE seq = %s ORDER BY version DESC",
                (r["seq"],),
            ).fetchall()
        ]
        found |= _named(_versions({c: r[c] for c in COLUMNS}, blobs))
    found |= _events(
        [
            (e["tenant"], e["user"], e["record_ids"], e["details"])
            for e in conn.execute(
                'SELECT tenant, "user", record_ids, details FROM audit_log '
                "WHERE action = 'set_access' AND \"user\" IS NOT NULL"
            ).fetchall()
        ]
    )
    index = {
        (r["tenant"], r["reader"], r["user"], r["id"])
        for r in conn.execute('SELECT tenant, reader, "user", id FROM record_readers').fetchall()
    }
    return index, found
