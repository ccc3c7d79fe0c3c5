"""Quota counters, leases and other components' user rows in the PostgreSQL store.

The statements of :mod:`memstrata.store.quota_counters` (``take_sql``, ``lease_sql``, ...)
and of :func:`memstrata.store.user_tables.purge_user_rows`, as PostgreSQL runs them (``%s``
placeholders; ``FOR UPDATE`` row locks make a take or a lease atomic), inside the caller's
write transaction. Those shared functions drive a sync connection (SQLite's too); these are
the same statements in the same order with the same pure planning (``quota_counters._plan``,
``_lease_free``), written once for the async store and its generated sync twin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memstrata.store.quota_counters import Refusal, Take, _int, _lease_free, _plan
from memstrata.store.user_tables import TABLE, _quoted

__all__ = [
    "add",
    "forget",
    "lease",
    "purge_user_rows",
    "release",
    "take",
    "tenant_records",
    "values",
]


async def _rows(c: Any, keys: Sequence[str], lock: bool) -> dict[str, str]:
    if not keys:
        return {}
    if lock:  # a row must exist to be locked: create missing ones first, in key order
        for key in keys:
            await c.execute(
                "INSERT INTO meta (key, value) VALUES (%s, '0') ON CONFLICT (key) DO NOTHING",
                (key,),
            )
    marks = ", ".join(["%s"] * len(keys))
    sql = f"SELECT key, value FROM meta WHERE key IN ({marks}) ORDER BY key"
    rows = await (await c.execute(sql + (" FOR UPDATE" if lock else ""), list(keys))).fetchall()
    return {str(r["key"]): str(r["value"]) for r in rows}


async def _write(c: Any, values: dict[str, int]) -> None:
    for key, value in sorted(values.items()):
        await _write_value(c, key, str(value))


async def _write_value(c: Any, key: str, value: str) -> None:
    await c.execute(
        "INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) "
        "DO UPDATE SET value = excluded.value",
        (key, value),
    )


async def take(c: Any, takes: Sequence[Take]) -> Refusal | None:
    keys = sorted({t.key for t in takes})
    used = {k: _int(v) for k, v in (await _rows(c, keys, True)).items()}
    after, refused = _plan(used, takes)
    if refused is None:
        await _write(c, {k: after[k] for k in keys})
    return refused


async def add(c: Any, takes: Sequence[Take]) -> None:
    await take(c, [Take(t.key, t.amount, None, t.ttl_seconds) for t in takes])


async def values(c: Any, keys: Sequence[str]) -> dict[str, int]:
    found = await _rows(c, sorted(set(keys)), False)
    return {k: _int(found.get(k, 0)) for k in keys}


async def forget(c: Any, keys: Sequence[str]) -> None:
    for key in sorted(set(keys)):
        await c.execute("DELETE FROM meta WHERE key = %s", (key,))


async def lease(c: Any, key: str, token: str, now_ms: int, until_ms: int) -> bool:
    await c.execute(
        "INSERT INTO meta (key, value) VALUES (%s, '0 -') ON CONFLICT (key) DO NOTHING",
        (key,),
    )
    row = await (
        await c.execute("SELECT value FROM meta WHERE key = %s FOR UPDATE", (key,))
    ).fetchone()
    if row is None:
        # The row we just made sure exists was deleted under us (its holder released it
        # while we waited on its lock): another writer may be inserting it now, so an
        # upsert here could take over its fresh lease. Try again instead.
        return False
    if not _lease_free(str(row["value"]), token, now_ms):
        return False
    await _write_value(c, key, f"{until_ms} {token}")
    return True


async def release(c: Any, key: str, token: str) -> None:
    row = await (
        await c.execute("SELECT value FROM meta WHERE key = %s FOR UPDATE", (key,))
    ).fetchone()
    if row is not None and str(row["value"]).partition(" ")[2] == token:
        await c.execute("DELETE FROM meta WHERE key = %s", (key,))


async def tenant_records(c: Any, tenant: str) -> int:
    """Records of every user of ``tenant`` (the table holds one row per record)."""
    row = await (
        await c.execute("SELECT count(*) AS n FROM records WHERE tenant = %s", (tenant,))
    ).fetchone()
    return int(row["n"])


async def _table_exists(c: Any, name: str) -> bool:
    """Whether ``name`` is a table of the store's schema (the connection's search path)."""
    row = await (
        await c.execute(
            "SELECT to_regclass(format('%%I.%%I', current_schema(), %s::text)) IS NOT NULL AS ok",
            (name,),
        )
    ).fetchone()
    return bool(row["ok"])


async def purge_user_rows(c: Any, tenant: str, user: str) -> int:
    """Delete ``user``'s rows of every table registered in ``user_tables`` (inside the
    caller's transaction); a registered table dropped since is skipped. Returns how many
    rows went."""
    if not await _table_exists(c, TABLE):
        return 0
    deleted = 0
    rows = await (
        await c.execute(f"SELECT name, tenant_column, user_column FROM {TABLE} ORDER BY name")
    ).fetchall()
    for row in rows:
        table, tenant_col, user_col = (
            _quoted(str(v)) for v in (row["name"], row["tenant_column"], row["user_column"])
        )
        if not await _table_exists(c, str(row["name"])):
            continue
        deleted += (
            await c.execute(
                f"DELETE FROM {table} WHERE {tenant_col} = %s AND {user_col} = %s",
                (tenant, user),
            )
        ).rowcount
    return deleted
