"""The ``api_keys`` table as stored rows: what a migration copies of the server's API keys.

The server's keys (:mod:`memstrata.server.keys`) live in the memory's own database, in a
table of their own: in a SQLite file (created by the first key store that opens it) or in
the PostgreSQL store's schema (migration 5). A row holds the key's id, the SHA-256 of its
secret (never the secret), its tenant, role, name, times, bound user and access roles, all
as text. The store layer owns the table's shape here, so that ``memstrata migrate`` can copy
a store's keys (:class:`~memstrata.store.base.StoreCopy` ``dump_keys``/``load_keys``)
without importing the server.

A user's purge deletes the keys bound to them in its own transaction: the table is
registered in the database's ``user_tables`` (:mod:`memstrata.store.user_tables`) by
whatever creates it or writes into it — the key stores, and a migration's load.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import astuple, dataclass
from typing import Any

from . import user_tables

__all__ = [
    "KEYS_OF_A_USER",
    "INSERT_KEY",
    "KEY_ROW_COLUMNS",
    "KeyRow",
    "ensure_sqlite_table",
    "pg_registration",
    "register_sql_of",
]

# api_keys rows naming one user: (table, tenant column, user column) for user_tables.py
KEYS_OF_A_USER = ("api_keys", "tenant", "user")
KEY_ROW_COLUMNS = 'id, key_hash, tenant, role, name, created_at, revoked_at, "user", roles'
# A load skips a key whose id (or hash) the table holds already: a resumed copy writes
# nothing twice, and a different key under the same id is left for the verification to name.
INSERT_KEY = f"INSERT INTO api_keys ({KEY_ROW_COLUMNS}) VALUES ({{marks}}) ON CONFLICT DO NOTHING"

_SQLITE_TABLE = """
CREATE TABLE IF NOT EXISTS api_keys (
    id TEXT PRIMARY KEY,
    key_hash TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    role TEXT NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    revoked_at TEXT,
    user TEXT,
    roles TEXT NOT NULL DEFAULT ''
)
"""
# Files written before keys could be bound to a user get the two columns added.
_SQLITE_ADDED = (("user", "TEXT"), ("roles", "TEXT NOT NULL DEFAULT ''"))


@dataclass(frozen=True, slots=True)
class KeyRow:
    """One stored API key, as its table holds it (times as ISO text)."""

    id: str
    key_hash: str
    tenant: str
    role: str
    name: str
    created_at: str
    revoked_at: str | None
    user: str | None
    roles: str

    @classmethod
    def of(cls, row: Mapping[str, Any] | sqlite3.Row) -> KeyRow:
        """A row read as :data:`KEY_ROW_COLUMNS` (by column name)."""
        revoked, user = row["revoked_at"], row["user"]
        return cls(
            str(row["id"]),
            str(row["key_hash"]),
            str(row["tenant"]),
            str(row["role"]),
            str(row["name"]),
            str(row["created_at"]),
            None if revoked is None else str(revoked),
            None if user is None else str(user),
            str(row["roles"] or ""),
        )

    def values(self) -> tuple[str | None, ...]:
        """The row's values in :data:`KEY_ROW_COLUMNS` order."""
        return astuple(self)


def register_sql_of(ph: str) -> tuple[str, tuple[str, str, str]]:
    """The statement and parameters registering ``api_keys`` for users' purges."""
    return user_tables.register_sql(ph), KEYS_OF_A_USER


def ensure_sqlite_table(conn: sqlite3.Connection) -> None:
    """Create ``api_keys`` in a SQLite file if it has none, add the columns an older file
    lacks, and register it for users' purges; inside the caller's write transaction (two
    processes opening an old file together would both see a column missing)."""
    conn.execute(_SQLITE_TABLE)
    have = {row[1] for row in conn.execute("PRAGMA table_info(api_keys)")}
    for column, decl in _SQLITE_ADDED:
        if column not in have:
            conn.execute(f"ALTER TABLE api_keys ADD COLUMN {column} {decl}")
    conn.execute(user_tables.DDL)
    conn.execute(*register_sql_of("?"))


def pg_registration() -> list[tuple[str, tuple[str, ...]]]:
    """The statements registering ``api_keys`` (migration 5 made it) for users' purges, on
    a PostgreSQL connection whose ``search_path`` is the store's schema, inside its
    transaction; serialised, as two processes creating one table at once can collide in
    PostgreSQL's catalog."""
    sql, params = register_sql_of("%s")
    return [
        ("SELECT pg_advisory_xact_lock(hashtext('memstrata:user_tables'))", ()),
        (user_tables.DDL, ()),
        (sql, params),
    ]
