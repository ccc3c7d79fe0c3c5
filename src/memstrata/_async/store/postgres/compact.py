"""Compaction of a PostgreSQL store: no byte of a deleted row left in the server's files.

A ``DELETE`` leaves the tuple's bytes in its heap page (and its keys in index pages) until
the table is rewritten, and the write-ahead log keeps every insert, and a full-page image
of each page the purge touched, until its segment is removed. :func:`compact` runs, on one
autocommit connection (``VACUUM`` cannot run inside a transaction block):

1. ``VACUUM (FULL, ANALYZE)`` of every table of the store's schema, one at a time: each is
   copied into new files without its dead tuples (indexes and TOAST rebuilt too) and the
   old files are truncated and unlinked. ``ANALYZE`` replaces the column statistics, whose
   most-common values and histogram bounds are sample values (a user id, a word).
2. ``VACUUM FULL pg_catalog.pg_statistic``: the replaced statistics rows are dead tuples of
   that catalog (needs a superuser or, from PostgreSQL 17, the ``pg_maintain`` role).
3. ``pg_switch_wal()`` then ``CHECKPOINT``: the segment holding the old bytes is closed and
   the checkpoint's redo point moves past it, so the server removes it (or recycles it:
   with ``wal_recycle = on`` the file is renamed for reuse and keeps its bytes until
   overwritten). Both need privileges (``pg_checkpoint``; ``EXECUTE`` on
   ``pg_switch_wal``).

Locks: each table's rewrite holds an ``ACCESS EXCLUSIVE`` lock, which blocks every read and
write of that table (other processes' searches and writes wait) until its copy is done, and
needs free disk space for a copy of the table and its indexes. A table another transaction
holds longer than ``lock_timeout`` is skipped and named, so a long transaction does not
stall every request queued behind the compaction.

What stays out of reach is reported per server (``residuals``): WAL archiving,
``wal_keep_size``, replication slots, connected standbys, ``wal_recycle``. Backups, the
file system's freed blocks and the server's logs are beyond any SQL (README).
"""

from __future__ import annotations

import time
from typing import Any

from memstrata.store.compaction import CompactReport

__all__ = ["compact"]


async def _tables(conn: Any, schema: str) -> list[dict[str, Any]]:
    return list(
        await (
            await conn.execute(
                "SELECT c.relname AS name, pg_relation_filenode(c.oid) AS node, "
                "pg_total_relation_size(c.oid) AS size FROM pg_class c JOIN pg_namespace n "
                "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r' ORDER BY 1",
                (schema,),
            )
        ).fetchall()
    )


async def _node(conn: Any, relation: str) -> int | None:
    row = await (
        await conn.execute("SELECT pg_relation_filenode(%s::regclass) AS node", (relation,))
    ).fetchone()
    return None if row is None else row["node"]


async def _rewrite(conn: Any, qualified: str, options: str) -> bool:
    """VACUUM one table; True if its files were replaced (a role that may not vacuum it
    gets a warning from PostgreSQL, not an error: the file node tells)."""
    before = await _node(conn, qualified)
    await conn.execute(f"VACUUM ({options}) {qualified}")
    return await _node(conn, qualified) != before


async def _setting(conn: Any, name: str) -> str:
    return str((await (await conn.execute(f"SHOW {name}")).fetchone())[name])


async def _residuals(conn: Any) -> list[str]:
    out: list[str] = []
    if await _setting(conn, "wal_recycle") == "on":
        out.append(
            "wal_recycle is on: removed WAL segments are renamed for reuse and keep their "
            "bytes until overwritten (set wal_recycle = off)"
        )
    if await _setting(conn, "archive_mode") != "off":
        out.append(
            "archive_mode is on: archived WAL segments hold the deleted rows (expire them in "
            "the archive)"
        )
    if await _setting(conn, "wal_keep_size") not in ("0", "0MB", "0kB"):
        out.append(
            f"wal_keep_size = {_setting(conn, 'wal_keep_size')} keeps old WAL segments "
            "(set it to 0 or wait until that much WAL is written)"
        )
    slots = (
        await (await conn.execute("SELECT count(*) AS n FROM pg_replication_slots")).fetchone()
    )["n"]
    if slots:
        out.append(
            f"{slots} replication slot(s) hold WAL until their consumer reads it (a logical "
            "slot decodes the deleted rows)"
        )
    standbys = (
        await (await conn.execute("SELECT count(*) AS n FROM pg_stat_replication")).fetchone()
    )["n"]
    if standbys:
        out.append(
            f"{standbys} standby(s) replay the rewrite but keep their own WAL: run CHECKPOINT "
            "on each"
        )
    return out


async def compact(conn: Any, schema: str, *, lock_timeout_s: float = 10.0) -> CompactReport:
    """Rewrite every table of ``schema`` and make the WAL holding old bytes removable.

    ``conn`` is an autocommit connection (it is left with its settings as found)."""
    from psycopg import errors, sql

    started = time.monotonic()
    tables = await _tables(conn, schema)
    rewritten: list[str] = []
    skipped: list[str] = []
    residuals: list[str] = []
    await conn.execute(
        "SELECT set_config('lock_timeout', %s, false)", (f"{int(lock_timeout_s * 1000)}",)
    )
    try:
        for t in tables:
            qualified = sql.Identifier(schema, t["name"]).as_string(conn)
            try:
                done = await _rewrite(conn, qualified, "FULL, ANALYZE")
            except errors.LockNotAvailable:
                done = False
                residuals.append(
                    f"table {t['name']} was locked by another transaction for over "
                    f"{lock_timeout_s:g} s and was not rewritten: run the compaction again"
                )
            (rewritten if done else skipped).append(t["name"])
        try:
            if not await _rewrite(conn, "pg_catalog.pg_statistic", "FULL"):
                residuals.append(
                    "pg_catalog.pg_statistic was not rewritten (needs a superuser or the "
                    "pg_maintain role): replaced column statistics may keep sample values"
                )
        except errors.LockNotAvailable:
            residuals.append("pg_catalog.pg_statistic was locked and not rewritten")
    finally:
        await conn.execute("RESET lock_timeout")
    switched = checkpoint = False
    try:
        await conn.execute("SELECT pg_switch_wal()")
        switched = True
    except errors.InsufficientPrivilege:
        residuals.append(
            "pg_switch_wal() is not permitted for this role (GRANT EXECUTE ON FUNCTION "
            "pg_switch_wal() TO it): the current WAL segment keeps the bytes until it fills"
        )
    try:
        await conn.execute("CHECKPOINT")
        checkpoint = True
    except errors.InsufficientPrivilege:
        residuals.append(
            "CHECKPOINT is not permitted for this role (grant it pg_checkpoint): the WAL "
            "keeps the bytes until the server's next checkpoint"
        )
    residuals.extend(await _residuals(conn))
    after = {t["name"]: t["size"] for t in await _tables(conn, schema)}
    return CompactReport(
        rewritten=tuple(rewritten),
        skipped=tuple(skipped),
        bytes_before=sum(int(t["size"]) for t in tables),
        bytes_after=sum(int(v) for v in after.values()),
        checkpoint=checkpoint,
        wal_switched=switched,
        seconds=round(time.monotonic() - started, 3),
        residuals=tuple(residuals),
    )
