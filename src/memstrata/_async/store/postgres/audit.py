"""The audit log of the PostgreSQL store (memstrata/audit.py): the ``audit_log`` table,
append-only (a trigger refuses updates and deletes), written and read in the store's own
transactions."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from memstrata.audit import PURGED, AuditEvent, AuditQuery
from memstrata.audit_types import event_of_row, names_user, row_of_event, unknown_event

__all__ = [
    "AUDIT_COLUMNS",
    "REDACT_READER_SETTING",
    "append",
    "query",
    "redact_actor",
    "redact_reader",
    "redact_subject",
]

AUDIT_COLUMNS = 'id, tenant, "user", actor, action, at, record_ids, reason, policy, score, details'


async def append(conn: Any, events: Sequence[AuditEvent]) -> None:
    rows = [row_of_event(e, json_ids=False) for e in events]
    if rows:
        async with conn.cursor() as cur:
            await cur.executemany(
                f"INSERT INTO audit_log ({AUDIT_COLUMNS}) VALUES ({', '.join(['%s'] * 11)})", rows
            )


async def redact_subject(conn: Any, tenant: str, user: str) -> int:
    """A user's purge: their events keep what/when/why, lose who and which ids (and an
    actor naming them: ``audit_types.names_user``, ``user:ann`` but not ``joanna``); other
    users' ``set_access`` events lose the user from the readers they list
    (:func:`redact_reader`), and other events whose actor is the user get ``[purged]`` as
    actor (:func:`redact_actor`)."""
    # the events whose actor holds the id, then those that name the user (names_user)
    rows = await (
        await conn.execute(
            'SELECT seq, actor FROM audit_log WHERE tenant = %(t)s AND "user" = %(u)s '
            "AND strpos(actor, %(u)s) > 0",
            {"t": tenant, "u": user},
        )
    ).fetchall()
    named = [int(r["seq"]) for r in rows if names_user(str(r["actor"]), user)]
    cur = await conn.execute(
        "UPDATE audit_log SET \"user\" = NULL, record_ids = '{}', reason = %(p)s, "
        "details = '{}', actor = CASE WHEN seq = ANY(%(n)s) THEN %(p)s ELSE actor END "
        'WHERE tenant = %(t)s AND "user" = %(u)s',
        {"p": PURGED, "t": tenant, "u": user, "n": named},
    )
    n = int(cur.rowcount) + await redact_reader(conn, tenant, user)
    return n + await redact_actor(conn, tenant, user)


async def redact_actor(conn: Any, tenant: str, user: str) -> int:
    """Other users' events (and events of no user) whose actor is ``user`` get
    ``[purged]`` as actor, the rest of each event kept, inside the caller's transaction.
    Exactly the id: an actor is free text a caller gave, and one that only contains the
    id (``system:maintenance`` for a user ``maintenance``) names someone else. Found by
    ``audit_log_actor`` (schema step 21); the trigger allows it while the transaction's
    :data:`REDACT_READER_SETTING` names the user."""
    where = 'tenant = %(t)s AND actor = %(u)s AND "user" IS DISTINCT FROM %(u)s'
    args = {"t": tenant, "u": user, "p": PURGED}
    hit = await (
        await conn.execute(f"SELECT 1 AS one FROM audit_log WHERE {where} LIMIT 1", args)
    ).fetchone()
    if hit is None:
        return 0
    await conn.execute("SELECT set_config(%s, %s, true)", (REDACT_READER_SETTING, user))
    try:
        cur = await conn.execute(f"UPDATE audit_log SET actor = %(p)s WHERE {where}", args)
    finally:
        await conn.execute("SELECT set_config(%s, '', true)", (REDACT_READER_SETTING,))
    return int(cur.rowcount)


# The setting that lets the audit log's trigger take a reader out of set_access events
# (schema.py, _V18_AUDIT_REDACT_READER): set for the purge's transaction only (SET LOCAL).
REDACT_READER_SETTING = "memstrata.redact_reader"
# Other users' set_access events of one record naming the user as a reader (the JSON
# string, then the parsed list: an id that is a substring of another's is not taken), by
# the partial index audit_log_set_access (schema step 20).
_NAMES_READER = (
    "tenant = %(t)s AND \"user\" = %(o)s AND action = 'set_access' "
    'AND record_ids = ARRAY[%(i)s::text] COLLATE "C" AND strpos(details, %(n)s) > 0 '
    "AND nul_safe_jsonb(details, 'uffff') -> 'allowed_users' "
    "@> jsonb_build_array(%(u)s::text)"
)


async def redact_reader(conn: Any, tenant: str, user: str) -> int:
    """Take ``user`` out of the readers listed in other users' ``set_access`` events (the
    events stay, with their other readers), inside the caller's transaction: the events of
    the records the index of readers holds for them (store/purged_reader.py), not the
    tenant's log. The trigger allows it only while the transaction's
    :data:`REDACT_READER_SETTING` names that user; it is set here for the transaction
    alone and emptied before this returns."""
    shared = await (
        await conn.execute(
            'SELECT "user", id FROM record_readers WHERE tenant = %s AND reader = %s '
            'AND "user" <> %s ORDER BY "user", id',
            (tenant, user, user),
        )
    ).fetchall()
    found = []
    for s in shared:
        owner, rid = (s["user"], s["id"]) if isinstance(s, Mapping) else tuple(s)
        args = {
            "t": tenant,
            "u": user,
            "n": json.dumps(user, ensure_ascii=False),
            "o": owner,
            "i": rid,
        }
        hit = await (
            await conn.execute(
                f"SELECT 1 AS one FROM audit_log WHERE {_NAMES_READER} LIMIT 1", args
            )
        ).fetchone()
        if hit is not None:
            found.append(args)
    if not found:
        return 0
    await conn.execute("SELECT set_config(%s, %s, true)", (REDACT_READER_SETTING, user))
    n = 0
    try:
        for args in found:
            cur = await conn.execute(
                "UPDATE audit_log SET details = jsonb_set(details::jsonb, '{allowed_users}', "
                "(SELECT coalesce(jsonb_agg(v ORDER BY o), '[]'::jsonb) FROM "
                "jsonb_array_elements(details::jsonb -> 'allowed_users') WITH ORDINALITY AS "
                f"a(v, o) WHERE v <> to_jsonb(%(u)s::text)))::text WHERE {_NAMES_READER} "
                "AND strpos(details, '\\u0000') = 0",
                args,
            )
            n += int(cur.rowcount)
            n += await _redact_legacy_reader(conn, args)
    finally:
        await conn.execute("SELECT set_config(%s, '', true)", (REDACT_READER_SETTING,))
    return n


async def _redact_legacy_reader(conn: Any, args: Mapping[str, str]) -> int:
    """The events of :func:`redact_reader`'s ``args`` whose details hold a legacy id with
    NUL (``\\u0000``: jsonb cannot read them, and the id must be kept as it is): the
    reader taken out in Python."""
    n = 0
    for row in await (
        await conn.execute(
            f"SELECT seq, details FROM audit_log WHERE {_NAMES_READER} "
            "AND strpos(details, '\\u0000') > 0",
            args,
        )
    ).fetchall():
        seq, text = (row["seq"], row["details"]) if isinstance(row, Mapping) else tuple(row)
        details = json.loads(text)
        details["allowed_users"] = [u for u in details["allowed_users"] if u != args["u"]]
        cur = await conn.execute(
            "UPDATE audit_log SET details = %s WHERE seq = %s",
            (json.dumps(details, ensure_ascii=False), seq),
        )
        n += int(cur.rowcount)
    return n


async def query(conn: Any, tenant: str, q: AuditQuery) -> list[AuditEvent]:
    sql = f"SELECT {AUDIT_COLUMNS} FROM audit_log WHERE tenant = %s"
    args: list[Any] = [tenant]
    for column, value in (('"user"', q.user), ("action", q.action), ("actor", q.actor)):
        if value is not None:
            sql += f" AND {column} = %s"
            args.append(value)
    if q.record_id is not None:
        sql += " AND %s = ANY (record_ids)"
        args.append(q.record_id)
    if q.since is not None:
        sql += " AND at >= %s"
        args.append(q.since.isoformat())
    if q.until is not None:
        sql += " AND at < %s"
        args.append(q.until.isoformat())
    if q.after is not None:
        cursor = await (
            await conn.execute(
                "SELECT at, seq FROM audit_log WHERE tenant = %s AND id = %s", (tenant, q.after)
            )
        ).fetchone()
        if cursor is None:
            raise unknown_event(tenant, q.after)
        at, seq = _values(cursor)
        sql += " AND (at > %s OR (at = %s AND seq > %s))"
        args += [at, at, seq]
    sql += " ORDER BY at, seq LIMIT %s OFFSET %s"
    args += [q.limit, q.offset]
    rows = await (await conn.execute(sql, args)).fetchall()
    return [event_of_row(_values(r), json_ids=False) for r in rows]


def _values(row: Any) -> tuple[Any, ...]:
    """A row's values in its columns' order, whichever row factory the connection has."""
    return tuple(row.values()) if isinstance(row, Mapping) else tuple(row)
