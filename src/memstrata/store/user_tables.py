"""Tables of other components that keep rows of one user in the store's database.

A user's purge must delete every row naming them in the same transaction as their records,
including rows of components the store knows nothing about (the server's API keys bound to
a user). Instead of the store importing those components, each registers its table here,
in the database itself: a row of ``user_tables`` names the table and its tenant and user
columns, and ``purge_user`` deletes the user's rows of every registered table inside its
own transaction. Being in the database, the registration holds for every process that
purges (a server, ``memstrata purge``, a library caller), not only the one that made it.

This module holds the DDL and the registration statement (the component calls
:func:`register_sql`/:data:`DDL` when it creates its table); the delete is
:func:`memstrata.store.shared_sql.purge_user_rows`.
"""

from __future__ import annotations

import re

from ..errors import StoreError

__all__ = ["DDL", "TABLE", "quoted", "register_sql"]

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


def quoted(name: str) -> str:
    """``name`` as a quoted SQL identifier, or :class:`StoreError` if it is not a plain one."""
    if not _IDENT.fullmatch(name):
        raise StoreError(
            f"{TABLE} names {name!r}, which is not a plain table or column name; remove that "
            "row (only memstrata's own components register tables there)"
        )
    return f'"{name}"'
