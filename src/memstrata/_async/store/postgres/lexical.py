"""The lexical index in PostgreSQL: postings, per-tenant statistics and BM25 as FTS5 ranks.

``lex_postings`` holds one row per (user, token, record) with the token's count and the
record's length (``len``: the scoring needs nothing else of the record); the
record row keeps its token list (``lex_tokens``) and length, ``lex_df`` the number of a
tenant's rows holding each token and ``lex_stats`` the number of the tenant's rows and
tokens. The statistics are the tenant's own, as each tenant has its own FTS5 table on
SQLite (``store/sqlite/lexical.py``): a tenant's scores never move with what another
tenant stores, so its searches reveal nothing of other tenants' words. They are counted in
slots (the backend's pid modulo :data:`SLOTS`) and summed when read, so writers in
different backends do not queue on one hot row; each transaction touches its rows in
(tenant, token) order, so two writers in the same slot wait for each other but never
deadlock.

A document is ``(seq, tenant, scope_tok, tokens)``: its record's ``seq``, tenant, scope
token (one user) and document tokens.

Scoring follows :mod:`memstrata.store.fts5`: single-token phrases (nearly every
term) are scored in SQL with the same double-precision operations in the same order;
a query holding a multi-token phrase is scored in Python from the records' token lists.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import psycopg

from memstrata.records import RecordType
from memstrata.scope import Scope
from memstrata.store import caller_bm25, fts5

__all__ = [
    "COPY_FROM",
    "SLOTS",
    "Doc",
    "caller_rows",
    "index",
    "search_rows",
    "unindex",
    "unindex_scope",
]

Doc = tuple[int, str, str, Sequence[str]]  # (seq, tenant, scope_tok, tokens)

SLOTS = 16
# Fewer postings than this (a few messages' worth) are one INSERT, not a COPY: a COPY
# costs its own round trips and cannot run in pipeline mode (store.py's inserts).
COPY_FROM = 1000
_INSERT_POSTINGS = (
    "INSERT INTO lex_postings (scope_tok, token, seq, tf, len) "
    "SELECT * FROM unnest(%s::text[], %s::text[], %s::int8[], %s::int4[], %s::int4[])"
)
_SLOT = f"(pg_backend_pid() %% {SLOTS})"


async def _bump_df(conn: psycopg.AsyncConnection[Any], deltas: Counter[tuple[str, str]]) -> None:
    """Add ``deltas`` ((tenant, token) -> rows) to ``lex_df``, in (tenant, token) order."""
    items = sorted((k, d) for k, d in deltas.items() if d)
    if not items:
        return
    await conn.execute(
        f"INSERT INTO lex_df (tenant, token, slot, df) SELECT n, t, {_SLOT}, d "
        "FROM unnest(%s::text[], %s::text[], %s::bigint[]) WITH ORDINALITY AS u(n, t, d, o) "
        "ORDER BY o ON CONFLICT (tenant, token, slot) DO UPDATE SET df = lex_df.df + excluded.df",
        ([k[0] for k, _ in items], [k[1] for k, _ in items], [d for _, d in items]),
    )


async def _bump_stats(
    conn: psycopg.AsyncConnection[Any], deltas: dict[str, tuple[int, int]]
) -> None:
    """Add ``deltas`` (tenant -> (rows, tokens)) to ``lex_stats``, in tenant order."""
    for tenant, (docs, tokens) in sorted(deltas.items()):
        if docs or tokens:
            await conn.execute(
                f"INSERT INTO lex_stats (tenant, slot, docs, tokens) VALUES (%s, {_SLOT}, %s, %s) "
                "ON CONFLICT (tenant, slot) DO UPDATE SET docs = lex_stats.docs + excluded.docs, "
                "tokens = lex_stats.tokens + excluded.tokens",
                (tenant, docs, tokens),
            )


def _add(totals: dict[str, tuple[int, int]], tenant: str, docs: int, tokens: int) -> None:
    had = totals.get(tenant, (0, 0))
    totals[tenant] = (had[0] + docs, had[1] + tokens)


def _negated(
    df: Counter[tuple[str, str]], totals: dict[str, tuple[int, int]]
) -> tuple[Counter[tuple[str, str]], dict[str, tuple[int, int]]]:
    return Counter({k: -n for k, n in df.items()}), {t: (-d, -n) for t, (d, n) in totals.items()}


async def index(
    conn: psycopg.AsyncConnection[Any], docs: Sequence[Doc], old: Sequence[Doc] = ()
) -> None:
    """Index documents (the records already hold their ``lex_tokens``), replacing the
    postings of ``old`` ones; their tenants' statistics kept in step."""
    df: Counter[tuple[str, str]] = Counter()
    totals: dict[str, tuple[int, int]] = {}
    if old:
        gone_df, gone_totals = _negated(*await unindex_rows(conn, old))
        df.update(gone_df)
        totals.update(gone_totals)
    postings: list[tuple[str, str, int, int, int]] = []
    for seq, tenant, scope_tok, doc in docs:
        counts = Counter(doc)
        length = len(doc) + 1  # the scope token is one more token of the row
        postings.extend((scope_tok, token, seq, tf, length) for token, tf in sorted(counts.items()))
        df.update((tenant, token) for token in counts)
        _add(totals, tenant, 1, length)
    if len(postings) >= COPY_FROM:  # COPY: ~15 postings per message, 15M for 1M messages
        async with (
            conn.cursor() as cur,
            cur.copy(
                "COPY lex_postings (scope_tok, token, seq, tf, len) FROM STDIN (FORMAT BINARY)"
            ) as copy,
        ):
            copy.set_types(["text", "text", "int8", "int4", "int4"])
            for row in postings:
                await copy.write_row(row)
    elif postings:  # one statement, which pipeline mode can send (COPY it cannot)
        await conn.execute(_INSERT_POSTINGS, [list(col) for col in zip(*postings, strict=True)])
    await _bump_df(conn, df)
    await _bump_stats(conn, totals)


async def unindex_rows(
    conn: psycopg.AsyncConnection[Any], rows: Sequence[Doc]
) -> tuple[Counter[tuple[str, str]], dict[str, tuple[int, int]]]:
    """Delete the postings of these documents; return what their statistics held:
    ((tenant, token) -> rows, tenant -> (rows, tokens))."""
    df: Counter[tuple[str, str]] = Counter()
    totals: dict[str, tuple[int, int]] = {}
    for seq, tenant, scope_tok, toks in rows:
        distinct = sorted(set(toks))
        if distinct:
            await conn.execute(
                "DELETE FROM lex_postings WHERE scope_tok = %s AND token = ANY(%s) AND seq = %s",
                (scope_tok, distinct, seq),
            )
        df.update((tenant, token) for token in distinct)
        _add(totals, tenant, 1, len(toks) + 1)
    return df, totals


async def unindex(conn: psycopg.AsyncConnection[Any], rows: Sequence[Doc]) -> None:
    """Remove records from the index (purge), keeping the statistics in step."""
    df, totals = _negated(*await unindex_rows(conn, rows))
    await _bump_df(conn, df)
    await _bump_stats(conn, totals)
    await _drop_unused(conn, list(df))


async def _drop_unused(conn: psycopg.AsyncConnection[Any], keys: Sequence[tuple[str, str]]) -> None:
    """Delete the statistics rows of (tenant, token)s none of the tenant's documents holds
    any more (a purge): a term only the purged records had must not stay in ``lex_df``."""
    for tenant in sorted({t for t, _ in keys}):
        await conn.execute(
            "DELETE FROM lex_df WHERE tenant = %s AND token IN (SELECT token FROM lex_df "
            "WHERE tenant = %s AND token = ANY(%s) GROUP BY token HAVING sum(df) <= 0)",
            (tenant, tenant, sorted({k for t, k in keys if t == tenant})),
        )


async def unindex_scope(
    conn: psycopg.AsyncConnection[Any], tenant: str, user: str, scope_tok: str
) -> None:
    """Remove every posting of one user (purge_user), keeping the statistics in step.

    Runs before the user's records are deleted: their lengths are read from them.
    """
    stats = await (
        await conn.execute(
            "SELECT count(*) AS n, coalesce(sum(lex_len), 0) AS t FROM records "
            'WHERE tenant = %s AND "user" = %s',
            (tenant, user),
        )
    ).fetchone()
    gone = await (
        await conn.execute(
            "DELETE FROM lex_postings WHERE scope_tok = %s RETURNING token", (scope_tok,)
        )
    ).fetchall()
    df = Counter((tenant, str(r["token"])) for r in gone)
    await _bump_df(conn, Counter({k: -n for k, n in df.items()}))
    if stats is not None:
        await _bump_stats(conn, {tenant: (-int(stats["n"]), -int(stats["t"]))})
    await _drop_unused(conn, list(df))


async def statistics(
    conn: psycopg.AsyncConnection[Any], tenant: str, tokens: Sequence[str]
) -> tuple[int, int, dict[str, int]]:
    """``(rows, total tokens, df per token)`` of ``tenant``'s documents."""
    stats = await (
        await conn.execute(
            "SELECT coalesce(sum(docs), 0) AS d, coalesce(sum(tokens), 0) AS t FROM lex_stats "
            "WHERE tenant = %s",
            (tenant,),
        )
    ).fetchone()
    docs, total = (int(stats["d"]), int(stats["t"])) if stats else (0, 0)
    df: dict[str, int] = {}
    if tokens:
        for r in await (
            await conn.execute(
                "SELECT token, sum(df) AS n FROM lex_df WHERE tenant = %s AND token = ANY(%s) "
                "GROUP BY token",
                (tenant, sorted(set(tokens))),
            )
        ).fetchall():
            df[str(r["token"])] = int(r["n"])
    return docs, total, df


async def search_rows(
    conn: psycopg.AsyncConnection[Any],
    tenant: str,
    scope_tok: str,
    terms: Sequence[str],
    where: str,
    args: Sequence[Any],
    limit: int | None,
    *,
    columns: str = "r.*",
) -> list[dict[str, Any]]:
    """Matching records (every column plus ``score``), best first, ties by insertion.

    ``scope_tok`` is the user's token, scored with ``tenant``'s statistics; ``where``/``args``
    restrict ``r`` (the records row) to the scope and the SQL filters.
    """
    phrases = fts5.query_phrases(terms)
    live = [(i, p) for i, p in enumerate(phrases) if p]
    if not live:
        return []
    if all(len(p) == 1 for _, p in live):
        return await _search_tokens(conn, tenant, scope_tok, live, where, args, limit, columns)
    wanted = sorted({t for _, p in live for t in p})
    docs, total, df = await statistics(conn, tenant, wanted)
    if docs == 0:
        return []
    avgdl = total / docs
    return await _search_phrases(
        conn, tenant, scope_tok, phrases, docs, avgdl, df, where, args, limit, columns
    )


# One statement (one round trip): the tenant's statistics, each token's idf, the user's
# postings scored by themselves (a posting carries its record's length), the best ``n`` kept,
# and only then their records read and checked against the scope and the filters (a LEFT
# JOIN: a row without a record did not pass). The idf and avgdl are computed in double
# precision with the operations of ``fts5.idf`` in the same order (``ln`` is the C
# library's ``log``, as Python's ``math.log``): bit-equal scores. With 2,000+ matches,
# reading every match's record was 77% of the statement (EXPLAIN ANALYZE). The records are
# read by ``seq``, one index probe per kept hit (a LATERAL subquery the planner cannot turn
# into a join): as a plain join, a context's 432 hits were hashed against a sequential scan
# of the user's 10k records (11 ms of PostgreSQL per statement against 2 ms). The idfs are
# computed once per token (``q`` MATERIALIZED), not once per posting (the planner inlined
# them: two ``ln`` and a numeric cast per posting; 4.1 -> 3.1 ms for 4,600 postings).
_TOKENS = (
    "WITH st AS (SELECT coalesce(sum(docs), 0)::float8 AS n, "
    "coalesce(sum(tokens), 0)::float8 AS t FROM lex_stats WHERE tenant = %s), "
    "raw AS (SELECT u.ord, u.token, ln((st.n - d.df + 0.5::float8) / (d.df + 0.5::float8)) "
    "AS x FROM unnest(%s::int[], %s::text[]) AS u(ord, token) CROSS JOIN st "
    "CROSS JOIN LATERAL (SELECT coalesce(sum(df), 0)::float8 AS df FROM lex_df "
    "WHERE lex_df.tenant = %s AND lex_df.token = u.token) d), "
    "q AS MATERIALIZED (SELECT ord, token, "
    "CASE WHEN x > 0.0::float8 THEN x ELSE '1e-6'::float8 END AS idf FROM raw), "
    "hits AS (SELECT p.seq, q.ord, q.idf * ((p.tf::float8 * %s::float8) / "
    "(p.tf::float8 + %s::float8 * (%s::float8 + %s::float8 * p.len::float8 "
    "/ (SELECT t / nullif(n, 0.0::float8) FROM st)))) AS part "
    "FROM q JOIN lex_postings p ON p.scope_tok = %s AND p.token = q.token), "
    "scored AS MATERIALIZED (SELECT seq, sum(part ORDER BY ord) AS score FROM hits "
    "GROUP BY seq{top}) "
    "SELECT {columns}, s.score FROM scored s "
    "LEFT JOIN LATERAL (SELECT * FROM records r WHERE r.seq = s.seq AND {where} LIMIT 1) r "
    "ON true ORDER BY s.score DESC, s.seq"
)
_SLACK = 32  # hits ranked beyond k for those the scope's other parts or the filters drop


async def _search_tokens(
    conn: psycopg.AsyncConnection[Any],
    tenant: str,
    scope_tok: str,
    live: list[tuple[int, tuple[str, ...]]],
    where: str,
    args: Sequence[Any],
    limit: int | None,
    columns: str,
) -> list[dict[str, Any]]:
    """Every phrase is one token (nearly every query): scored in SQL, in one statement.

    The best ``n`` postings' records are read; when fewer than ``limit`` of them pass
    ``where`` and there were more hits, ``n`` grows eightfold and the statement runs again,
    so the answer is always that of scoring every match with its record (as on SQLite).
    """
    n = None if limit is None else limit + _SLACK
    while True:
        top = "" if n is None else " ORDER BY score DESC, seq LIMIT %s"
        params: list[Any] = [
            tenant,
            [i for i, _ in live],
            [p[0] for _, p in live],
            tenant,
            fts5.K1_PLUS_1,
            fts5.K1,
            fts5.ONE_MINUS_B,
            fts5.B,
            scope_tok,
        ]
        if n is not None:
            params.append(n)
        params.extend(args)
        rows = await (
            await conn.execute(_TOKENS.format(where=where, top=top, columns=columns), params)
        ).fetchall()
        out = [r for r in rows if r["id"] is not None]  # id: NOT NULL in every record
        if limit is None or n is None:
            return out
        if len(out) >= limit or len(rows) < n:
            return out[:limit]
        n *= 8


async def _search_phrases(
    conn: psycopg.AsyncConnection[Any],
    tenant: str,
    scope_tok: str,
    phrases: list[tuple[str, ...]],
    docs: int,
    avgdl: float,
    df: dict[str, int],
    where: str,
    args: Sequence[Any],
    limit: int | None,
    columns: str,
) -> list[dict[str, Any]]:
    """The rare path: a phrase of several tokens (e.g. a term with ``・`` inside)."""
    idfs: list[float] = []
    for p in phrases:
        if len(p) == 0:
            idfs.append(0.0)
        elif len(p) == 1:
            idfs.append(fts5.idf(docs, df.get(p[0], 0)))
        else:
            # The tenant's rows holding the phrase: a scan, on this rare path only.
            rows = await (
                await conn.execute(
                    "SELECT lex_tokens FROM records WHERE tenant = %s AND lex_tokens @> %s",
                    (tenant, list(p)),
                )
            ).fetchall()
            hits = sum(1 for r in rows if fts5.phrase_count(r["lex_tokens"], p))
            idfs.append(fts5.idf(docs, hits))
    first = sorted({p[0] for p in phrases if p})
    rows = await (
        await conn.execute(
            f"SELECT {columns}, r.lex_tokens, r.lex_len FROM records r WHERE r.seq IN "
            "(SELECT seq FROM lex_postings WHERE "
            f"scope_tok = %s AND token = ANY(%s)) AND {where}",
            [scope_tok, first, *args],
        )
    ).fetchall()
    scored: list[tuple[float, int, dict[str, Any]]] = []
    for row in rows:
        doc = list(row["lex_tokens"])
        score = 0.0
        matched = False
        for p, w in zip(phrases, idfs, strict=True):
            freq = fts5.phrase_count(doc, p)
            if freq:
                matched = True
            score += fts5.term_score(w, float(freq), float(row["lex_len"]), avgdl)
        if matched:
            scored.append((-score, int(row["seq"]), {**row, "score": score}))
    scored.sort(key=lambda s: (s[0], s[1]))
    out = [s[2] for s in scored]
    return out if limit is None else out[:limit]


# What a caller may read, in two parts, each checked by the caller's rule (``{readable}``):
# the records the index of readers names the caller for (``record_readers``,
# store/purged_reader.py: its trigger adds every current row's readers), read whole, and the
# owner's public records and, for a caller with roles, those whose access lists roles,
# counted over the owner's rows without parsing their JSON and read only where the owner's
# postings hold a word of the query. The first part leaves out what the second counts.
# Written out (no parameter) so the planner proves it implies the predicate of the partial
# index ``records_shared_wide`` (schema step 22).
_PUBLIC = "r.visibility = 'public'"
_WIDE = f"({_PUBLIC} OR strpos(r.access, '\"allowed_roles\":[]') = 0)"
_DOC = (
    "r.seq, r.lex_len, r.lex_tokens, CASE WHEN r.type = '{message}' THEN r.raw END AS own, "
    "({where}) AS ok"
)
_NAMED = (
    f"SELECT {_DOC} FROM record_readers rr JOIN records r ON r.tenant = rr.tenant AND "
    'r."user" = rr."user" AND r.id = rr.id WHERE rr.tenant = %s AND rr.reader = %s AND '
    'rr."user" = %s AND NOT {wide} AND {readable}'
)
_WIDE_STATS = (
    "SELECT count(*) AS n, coalesce(sum(r.lex_len), 0) AS t FROM records r WHERE "
    'r.tenant = %s AND r."user" = %s AND {wide} AND {readable}'
)
_WIDE_HOLDING = (
    f"SELECT {_DOC} FROM records r WHERE r.seq IN (SELECT DISTINCT p.seq FROM lex_postings p "
    "WHERE p.scope_tok = %s AND p.token = ANY(%s)) AND {wide} AND {readable}"
)


async def caller_rows(
    conn: psycopg.AsyncConnection[Any],
    scope: Scope,
    scope_tok: str,
    terms: Sequence[str],
    readable: tuple[str, Sequence[Any]],
    where: tuple[str, Sequence[Any]],
    *,
    columns: str,
) -> list[dict[str, Any]]:
    """A caller's matches of ``terms`` (``columns`` of each plus ``score``), best first,
    ties by insertion: scored (:mod:`memstrata.store.caller_bm25`) with the statistics of
    the records ``readable`` admits (the caller's rule over the owner's records), kept if
    ``where`` admits them too (the scope's other parts and the SQL filters). Reads what is
    shared with the caller by name, the count and length of the public and role-shared
    records and those of them the owner's postings (``scope_tok``) of the query's tokens
    name (a message by its own text), then the kept matches' ``columns``; nothing of the
    tenant's statistics nor of the owner's unshared records' tokens."""
    phrases = [p for p in fts5.query_phrases(terms) if p]
    if not phrases:
        return []
    fill = {
        "message": RecordType.MESSAGE.value,
        "where": where[0],
        "readable": readable[0],
        "wide": _WIDE if scope.roles else _PUBLIC,
    }
    rows = await (
        await conn.execute(
            _NAMED.format(**fill),
            [*where[1], scope.tenant, scope.caller, scope.user, *readable[1]],
        )
    ).fetchall()
    stats = [len(rows), sum(int(r["lex_len"]) for r in rows)]
    wide = await (
        await conn.execute(_WIDE_STATS.format(**fill), [scope.tenant, scope.user, *readable[1]])
    ).fetchone()
    if wide is not None and int(wide["n"]):
        stats = [stats[0] + int(wide["n"]), stats[1] + int(wide["t"])]
        tokens = sorted({t for p in phrases for t in p})
        rows += await (
            await conn.execute(
                _WIDE_HOLDING.format(**fill),
                [*where[1], scope_tok, tokens, *readable[1]],
            )
        ).fetchall()
    rows.sort(key=lambda r: int(r["seq"]))
    docs = [
        (int(r["seq"]), int(r["lex_len"]), list(r["lex_tokens"]))
        if r["own"] is None
        else caller_bm25.own_doc(int(r["seq"]), str(r["own"]))
        for r in rows
    ]
    kept = {int(r["seq"]) for r in rows if r["ok"]}
    ranked = caller_bm25.rank(docs, terms, (stats[0], stats[1]))
    hits = [(seq, score) for seq, score in ranked if seq in kept]
    if not hits:
        return []
    found = {
        int(r["seq"]): r
        for r in await (
            await conn.execute(
                f"SELECT {columns}, r.seq FROM records r WHERE r.seq = ANY(%s)",
                ([seq for seq, _ in hits],),
            )
        ).fetchall()
    }
    return [{**found[seq], "score": score} for seq, score in hits if seq in found]
