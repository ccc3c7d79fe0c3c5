"""Step 32's re-term of long words, made before the migration's transaction (pg34).

A word of 1,000-2,650 bytes written before session 31's bound (fts5.bounded: wider ones
were refused) is indexed whole, while a query asks for its bounded token: such a record
was not found by that word until written again. Step 32 gives its ``lex_tokens`` and
postings the bounded token. Its scan of every record's ``lex_tokens`` ran inside the
upgrade's transaction, with every write of this memstrata waiting for it (0.4-0.7 s at
110,000 records, ~6 s at 1M: docs/measurements.md, sessions 33-34).

Now an upgrade from schema 29-31 makes it first (:func:`prebound`), :data:`PART` such
records a transaction, each part's rows locked (``FOR UPDATE``) while their tokens and
postings are rewritten, so a writer's change of one of them is either seen whole or waits.
It notes, before it starts, the oldest transaction then running (its snapshot's ``xmin``);
in the migration's transaction the step (:func:`bound_words`) reads again only the rows
written by that transaction or a later one (``age(xmin)``), which it can tell without
reading their ``lex_tokens``. Writers of schema 29 or later bound their words already, so
it normally finds none. Without a pre-pass in this session (a fresh store, a store older
than 29, another memstrata's), the step reads every row, as before. A migration killed
here leaves its store at its version with a part of the records re-termed, each whole: the
next upgrade's pass finds the rest.
"""

from __future__ import annotations

from typing import cast

import psycopg

from memstrata.store import fts5
from memstrata.store.sqlite.codec import scope_token

__all__ = ["PART", "bound_words", "prebound"]

PART = 500  # records re-termed at a time
_SINCE = "pg_temp.memstrata_bounded_since"  # the pre-pass's oldest transaction, this session
_LONG = (
    'SELECT seq, tenant, "user", lex_tokens FROM records WHERE seq > %s {since}AND EXISTS ('
    "SELECT 1 FROM unnest(lex_tokens) t WHERE octet_length(t) > %s) ORDER BY seq LIMIT %s "
    "FOR UPDATE"
)
# a row written by the pass's oldest running transaction or a later one (a frozen xmin is
# older than any: age() is then the largest integer)
_WRITTEN_SINCE = "AND age(xmin) <= age(%s::text::xid) "
_TRIES = 5  # a part that deadlocked with a writer (PostgreSQL rolled it back): again


async def _part(
    cur: psycopg.AsyncCursor[tuple[object, ...]], last: int, since: str | None
) -> int | None:
    """Re-term the next :data:`PART` records after ``seq`` ``last`` holding a long token
    (written since ``since`` only, when given), their rows locked while they change (a
    writer of an older memstrata takes no lock of the schema: migrated.py); the last
    ``seq`` read, ``None`` when none."""
    from memstrata._async.store.postgres import lexical

    query = _LONG.format(since=_WRITTEN_SINCE if since is not None else "")
    args = (last, since, fts5.MAX_TOKEN_BYTES, PART) if since is not None else (
        last, fts5.MAX_TOKEN_BYTES, PART
    )  # fmt: skip
    await cur.execute(query.encode(), args)
    rows = await cur.fetchall()
    if not rows:
        return None
    olds: list[lexical.Doc] = []
    news: list[lexical.Doc] = []
    updates: list[tuple[list[str], int]] = []
    for seq, tenant, user, tokens in rows:
        had = list(cast(list[str], tokens))
        doc = [fts5.bounded(t) for t in had]
        s = cast(int, seq)
        tok = scope_token(str(tenant), str(user))
        updates.append((doc, s))
        olds.append((s, str(tenant), tok, had))
        news.append((s, str(tenant), tok, doc))
    await cur.executemany(b"UPDATE records SET lex_tokens = %s WHERE seq = %s", updates)
    await lexical.index(cur.connection, news, old=olds)
    return cast(int, rows[-1][0])


async def prebound(conn: psycopg.AsyncConnection[tuple[object, ...]]) -> None:
    """Re-term every record holding a long token, before the migration's transaction, a
    transaction a part; ``conn`` is in autocommit mode, its search path the store's
    schema; the caller holds the migration lock. Noted for :func:`bound_words` once whole."""
    await conn.execute(
        f"CREATE TEMPORARY TABLE IF NOT EXISTS {_SINCE.split('.')[1]} (x TEXT NOT NULL)"
    )
    await conn.execute(f"TRUNCATE {_SINCE}")
    row = await (
        await conn.execute(
            "SELECT (pg_snapshot_xmin(pg_current_snapshot())::text::numeric "
            "% 4294967296)::bigint::text"
        )
    ).fetchone()
    since = str(row[0]) if row else None
    last = 0
    while True:
        for tried in range(1, _TRIES + 1):
            try:
                async with conn.transaction(), conn.cursor() as cur:
                    done = await _part(cur, last, None)
                break  # committed: only now the next part
            except psycopg.errors.DeadlockDetected:
                if tried == _TRIES:
                    raise
        if done is None:
            break
        last = done
    await conn.execute(f"INSERT INTO {_SINCE} (x) VALUES (%s)", (since,))


async def bound_words(cur: psycopg.AsyncCursor[tuple[object, ...]]) -> None:
    """Step 32, in the migration's transaction: the rows written since :func:`prebound`
    started when it ran whole in this session, else every row."""
    await cur.execute("SELECT to_regclass(%s) IS NOT NULL", (_SINCE,))
    row = await cur.fetchone()
    since = None
    if row and row[0]:
        await cur.execute(f"SELECT x FROM {_SINCE}")
        found = await cur.fetchone()
        since = str(found[0]) if found else None
    last: int | None = 0
    while last is not None:
        last = await _part(cur, last, since)
    if row and row[0]:
        await cur.execute(f"DROP TABLE {_SINCE}")
