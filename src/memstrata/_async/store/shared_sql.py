"""SQL the SQLite and PostgreSQL stores share, inside the caller's write transaction.

Quota counters and leases as rows of ``meta`` (:mod:`memstrata.store.quota_counters` has
their contract and pure logic), and the delete of a purged user's rows in other components'
tables (:mod:`memstrata.store.user_tables`). Each store passes its connection, its driver's
placeholder (``?`` or ``%s``) and whether rows must be locked (PostgreSQL: ``FOR UPDATE``
after creating missing rows; SQLite's ``BEGIN IMMEDIATE`` already serialises writers).
Written once, async (the async PostgreSQL store awaits it); the sync stores use its twin.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from memstrata.store.counter_types import (
    SWEEP_EVERY_US,
    SWEEP_KEY,
    SWEEP_ROWS,
    SWEPT_RANGES,
    family_end,
    is_older,
    stale_at_us,
)
from memstrata.store.quota_counters import Refusal, Take, lease_free, parse_count, plan_takes
from memstrata.store.user_tables import TABLE, quoted

__all__ = [
    "add_sql",
    "count_sql",
    "forget_sql",
    "lease_sql",
    "purge_user_rows",
    "release_sql",
    "sweep_sql",
    "take_sql",
    "tenant_records_sql",
    "values_sql",
]


async def _rows(
    c: Any, keys: Sequence[str], ph: str, lock: bool, created: set[str] | None = None
) -> dict[str, str]:
    """The rows of ``keys``; with ``created``, the keys that had no row are added to it."""
    if not keys:
        return {}
    if lock:  # a row must exist to be locked: create missing ones first, in key order
        for key in keys:
            made = await c.execute(
                f"INSERT INTO meta (key, value) VALUES ({ph}, '0') ON CONFLICT (key) DO NOTHING",
                (key,),
            )
            if created is not None and made.rowcount == 1:
                created.add(key)
    marks = ", ".join([ph] * len(keys))
    sql = f"SELECT key, value FROM meta WHERE key IN ({marks}) ORDER BY key"
    rows = await (await c.execute(sql + (" FOR UPDATE" if lock else ""), list(keys))).fetchall()
    found = {str(r["key"]): str(r["value"]) for r in rows}
    if created is not None and not lock:
        created.update(k for k in keys if k not in found)
    return found


async def _sweep(c: Any, takes: Sequence[Take], created: set[str], ph: str) -> None:
    """Delete the past periods of each family whose counter of a new period was just made
    (:class:`~memstrata.store.counter_types.Take`): one range read of the family's rows on
    ``meta``'s primary key, in the take's transaction, never the new key itself."""
    swept: set[str] = set()
    stale: set[str] = set()
    sql = f"SELECT key FROM meta WHERE key >= {ph} AND key < {ph} ORDER BY key LIMIT {SWEEP_ROWS}"
    for t in takes:
        if not t.family or t.key not in created or t.family in swept:
            continue
        swept.add(t.family)
        rows = await (await c.execute(sql, (t.family, family_end(t.family)))).fetchall()
        for row in rows:
            key = str(row["key"])
            if key != t.key and is_older(key[len(t.family) :], t.keep_from):
                stale.add(key)
    # in key order, as every take locks its rows: two sweeps (or a sweep and a process a
    # day behind taking an old day's row) wait for each other, never in a cycle
    for key in sorted(stale):
        await c.execute(f"DELETE FROM meta WHERE key = {ph}", (key,))


_DELETE_CHUNK = 500  # keys a DELETE names at most (SQLite's variables limit is 32,766)


async def sweep_sql(c: Any, now_us: int, limit: int, *, ph: str) -> int:
    """The store-wide sweep of counter rows (session 30; ``maintain``'s last step), inside
    the caller's write transaction: up to ``limit`` rows of ``meta``'s counter ranges read
    on its primary key from where the last call stopped, those that stopped counting by
    ``now_us`` deleted (:func:`~memstrata.store.counter_types.stale_at_us`: never today's
    or yesterday's day, never the current or the previous rate window), and where it
    stopped written back. A pass that reached the end starts again only
    :data:`~memstrata.store.counter_types.SWEEP_EVERY_US` later. How many rows went."""
    found = await c.execute(f"SELECT value FROM meta WHERE key = {ph}", (SWEEP_KEY,))
    row = await found.fetchone()
    due, _, after = ("0 " if row is None else str(row["value"])).partition(" ")
    if not after and now_us < int(due or 0):
        return 0  # the last pass ended less than SWEEP_EVERY_US ago
    stale: list[str] = []
    left = limit
    for low, high in SWEPT_RANGES:
        if left <= 0 or after >= high:
            continue
        sql = (
            f"SELECT key FROM meta WHERE key >= {ph} AND key > {ph} AND key < {ph} "
            f"ORDER BY key LIMIT {left}"
        )
        keys = [str(r["key"]) for r in await (await c.execute(sql, (low, after, high))).fetchall()]
        left -= len(keys)
        for key in keys:
            end = stale_at_us(key)
            if end is not None and end <= now_us:
                stale.append(key)
        if keys:
            after = keys[-1]
    # in key order, as a take locks its rows (see _sweep; PostgreSQL scans an IN list on
    # the primary key in the index's order), _DELETE_CHUNK a statement: one statement a
    # row took 0.1 ms each on PostgreSQL
    for i in range(0, len(stale), _DELETE_CHUNK):
        chunk = stale[i : i + _DELETE_CHUNK]
        await c.execute(f"DELETE FROM meta WHERE key IN ({', '.join([ph] * len(chunk))})", chunk)
    mark = f"{now_us + SWEEP_EVERY_US} " if left > 0 else f"0 {after}"  # the end, or not yet
    await _write_value(c, SWEEP_KEY, mark, ph)
    return len(stale)


async def _write(c: Any, values: dict[str, int], ph: str) -> None:
    for key, value in sorted(values.items()):
        await _write_value(c, key, str(value), ph)


async def _write_value(c: Any, key: str, value: str, ph: str) -> None:
    await c.execute(
        f"INSERT INTO meta (key, value) VALUES ({ph}, {ph}) ON CONFLICT (key) "
        "DO UPDATE SET value = excluded.value",
        (key, value),
    )


async def take_sql(c: Any, takes: Sequence[Take], *, ph: str, lock: bool) -> Refusal | None:
    keys = sorted({t.key for t in takes})
    created: set[str] = set()
    used = {k: parse_count(v) for k, v in (await _rows(c, keys, ph, lock, created)).items()}
    after, refused = plan_takes(used, takes)
    if refused is None:
        await _write(c, {k: after[k] for k in keys}, ph)
    await _sweep(c, takes, created, ph)  # refused too: PostgreSQL made the rows to lock them
    return refused


async def add_sql(c: Any, takes: Sequence[Take], *, ph: str, lock: bool) -> None:
    unlimited = [Take(t.key, t.amount, None, t.ttl_seconds) for t in takes]
    await take_sql(c, unlimited, ph=ph, lock=lock)


async def count_sql(c: Any, takes: Sequence[Take], *, ph: str, lock: bool) -> int | None:
    """Unlimited takes (positive amounts, distinct keys in key order) at the end of the
    caller's write transaction (:mod:`memstrata.store.counted_writes`). PostgreSQL
    (``lock``): one upsert, whose row locks last only to the ``COMMIT`` that follows, and
    which says which rows it made (those sweep their family's past days, as a take that
    creates a day's row does) and the transaction's id (to ask whether it committed when
    its ``COMMIT`` raised: session 34); SQLite: the general take (its write lock is held
    already), no id."""
    if not takes:
        return None
    if not lock:
        await take_sql(c, takes, ph=ph, lock=False)
        return None
    rows = ", ".join([f"({ph}, {ph})"] * len(takes))
    made = await (
        await c.execute(
            f"INSERT INTO meta (key, value) VALUES {rows} ON CONFLICT (key) DO UPDATE SET "
            "value = ((CASE WHEN meta.value ~ '^[0-9]+$' THEN meta.value::bigint ELSE 0 END)"
            " + excluded.value::bigint)::text RETURNING key, (xmax = 0) AS made, "
            "txid_current() AS xid",
            [x for t in takes for x in (t.key, str(t.amount))],
        )
    ).fetchall()
    created = {str(r["key"]) for r in made if r["made"]}
    if created:
        await _sweep(c, takes, created, ph)
    return int(made[0]["xid"]) if made else None


async def values_sql(c: Any, keys: Sequence[str], *, ph: str) -> dict[str, int]:
    found = await _rows(c, sorted(set(keys)), ph, False)
    return {k: parse_count(found.get(k, 0)) for k in keys}


async def forget_sql(c: Any, keys: Sequence[str], *, ph: str) -> None:
    for key in sorted(set(keys)):
        await c.execute(f"DELETE FROM meta WHERE key = {ph}", (key,))


async def lease_sql(
    c: Any, key: str, token: str, now_ms: int, until_ms: int, *, ph: str, lock: bool
) -> bool:
    if lock:
        await c.execute(
            f"INSERT INTO meta (key, value) VALUES ({ph}, '0 -') ON CONFLICT (key) DO NOTHING",
            (key,),
        )
    sql = f"SELECT value FROM meta WHERE key = {ph}" + (" FOR UPDATE" if lock else "")
    row = await (await c.execute(sql, (key,))).fetchone()
    if row is None and lock:
        # The row we just made sure exists was deleted under us (its holder released it
        # while we waited on its lock): another writer may be inserting it now, so an
        # upsert here could take over its fresh lease. Try again instead.
        return False
    if not lease_free(None if row is None else str(row["value"]), token, now_ms):
        return False
    await _write_value(c, key, f"{until_ms} {token}", ph)
    return True


async def tenant_records_sql(c: Any, tenant: str, *, ph: str) -> int:
    """Records of every user of ``tenant`` (the table holds one row per record)."""
    sql = f"SELECT count(*) AS n FROM records WHERE tenant = {ph}"
    row = await (await c.execute(sql, (tenant,))).fetchone()
    return int(row["n"])


async def release_sql(c: Any, key: str, token: str, *, ph: str, lock: bool) -> None:
    sql = f"SELECT value FROM meta WHERE key = {ph}" + (" FOR UPDATE" if lock else "")
    row = await (await c.execute(sql, (key,))).fetchone()
    if row is not None and str(row["value"]).partition(" ")[2] == token:
        await c.execute(f"DELETE FROM meta WHERE key = {ph}", (key,))


async def purge_user_rows(
    conn: Any,
    tenant: str,
    user: str,
    *,
    ph: str,
    table_exists: Callable[[str], Awaitable[bool]],
) -> int:
    """Delete ``user``'s rows of every table registered in ``user_tables`` (inside the
    caller's transaction). ``table_exists(name)`` tells whether a table exists in the
    store's schema: without ``user_tables`` nothing is registered; a registered table
    dropped since is skipped. Returns how many rows went."""
    if not await table_exists(TABLE):
        return 0
    deleted = 0
    rows = await conn.execute(f"SELECT name, tenant_column, user_column FROM {TABLE} ORDER BY name")
    for row in await rows.fetchall():
        if isinstance(row, dict):
            row = (row["name"], row["tenant_column"], row["user_column"])
        table, tenant_col, user_col = (quoted(str(v)) for v in row)
        if not await table_exists(str(row[0])):
            continue
        deleted += (
            await conn.execute(
                f"DELETE FROM {table} WHERE {tenant_col} = {ph} AND {user_col} = {ph}",
                (tenant, user),
            )
        ).rowcount
    return deleted
