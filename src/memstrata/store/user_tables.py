"""Tables of other components that keep rows of one user in the store's database.

A user's purge must delete every row naming them in the same transaction as their records,
including rows of components the store knows nothing about (the server's API keys bound to
a user). Instead of the store importing those components, each registers its table here,
in the database itself: a row of ``user_tables`` names the table and its tenant and user
columns, and ``purge_user`` deletes the user's rows of every registered table inside its
own transaction. Being in the database, the registration holds for every process that
purges (a server, ``memstrata purge``, a library caller), not only the one that made it.

This module is the store's side (the DDL, the registration statement and the delete); the
component calls :func:`register_sql`/:data:`DDL` when it creates its table.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..errors import StoreError

__all__ = ["DDL", "TABLE", "purge_user_rows", "register_sql"]

TABLE = "user_tables"
DDL = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (name TEXT PRIMARY KEY, tenant_column TEXT NOT NULL, "
    "user_column TEXT NOT NULL)"
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


def register_sql(ph: str) -> str:
    """The statement registering one table (parameters: name, tenant column, user column;
    ``ph`` is the driver's placeholder). Re-registering is a no-op."""
    return (
        f"INSERT INTO {TABLE} (name, tenant_column, user_column) VALUES ({ph}, {ph}, {ph}) "
        "ON CONFLICT (name) DO NOTHING"
    )


def _quoted(name: str) -> str:
    if not _IDENT.fullmatch(name):
        raise StoreError(
            f"{TABLE} names {name!r}, which is not a plain table or column name; remove that "
            "row (only memstrata's own components register tables there)"
        )
    return f'"{name}"'


def purge_user_rows(
    conn: Any, tenant: str, user: str, *, ph: str, table_exists: Callable[[str], bool]
) -> int:
    """Delete ``user``'s rows of every registered table (inside the caller's transaction).
    ``table_exists(name)`` tells whether a table exists in the store's schema: without
    ``user_tables`` nothing is registered; a registered table dropped since is skipped.
    Returns how many rows went."""
    if not table_exists(TABLE):
        return 0
    deleted = 0
    rows = conn.execute(f"SELECT name, tenant_column, user_column FROM {TABLE} ORDER BY name")
    for row in rows.fetchall():
        if isinstance(row, dict):
            row = (row["name"], row["tenant_column"], row["user_column"])
        table, tenant_col, user_col = (_quoted(str(v)) for v in row)
        if not table_exists(str(row[0])):
            continue
        deleted += conn.execute(
            f"DELETE FROM {table} WHERE {tenant_col} = {ph} AND {user_col} = {ph}",
            (tenant, user),
        ).rowcount
    return deleted
