"""The lexical index in PostgreSQL: postings, table-wide statistics and BM25 as FTS5 ranks.

``lex_postings`` holds one row per (user, token, record) with the token's count and the
record's length (``len``: the scoring needs nothing else of the record); the
record row keeps its token list (``lex_tokens``) and length, ``lex_df`` the number of rows
holding each token and ``lex_stats`` the number of rows and tokens. The statistics are
counted in slots (the backend's pid modulo :data:`SLOTS`) and summed when read, so writers
in different backends do not queue on one hot row; each transaction touches its rows in
token order, so two writers in the same slot wait for each other but never deadlock.

Scoring follows :mod:`memstrata.store.postgres.fts5`: single-token phrases (nearly every
term) are scored in SQL with the same double-precision operations in the same order;
a query holding a multi-token phrase is scored in Python from the records' token lists.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import psycopg

from memstrata.store.postgres import fts5

__all__ = ["COPY_FROM", "SLOTS", "index", "search_rows", "unindex", "unindex_scope"]

SLOTS = 16
# Fewer postings than this (a few messages' worth) are one INSERT, not a COPY: a COPY
# costs its own round trips and cannot run in pipeline mode (store.py's inserts).
COPY_FROM = 1000
_INSERT_POSTINGS = (
    "INSERT INTO lex_postings (scope_tok, token, seq, tf, len) "
    "SELECT * FROM unnest(%s::text[], %s::text[], %s::int8[], %s::int4[], %s::int4[])"
)
_SLOT = f"(pg_backend_pid() %% {SLOTS})"


async def _bump_df(conn: psycopg.AsyncConnection[Any], deltas: Counter[str]) -> None:
    items = sorted((t, d) for t, d in deltas.items() if d)
    if not items:
        return
    await conn.execute(
        f"INSERT INTO lex_df (token, slot, df) SELECT t, {_SLOT}, d "
        "FROM unnest(%s::text[], %s::bigint[]) WITH ORDINALITY AS u(t, d, o) ORDER BY o "
        "ON CONFLICT (token, slot) DO UPDATE SET df = lex_df.df + excluded.df",
        ([t for t, _ in items], [d for _, d in items]),
    )


async def _bump_stats(conn: psycopg.AsyncConnection[Any], docs: int, tokens: int) -> None:
    if docs or tokens:
        await conn.execute(
            f"INSERT INTO lex_stats (slot, docs, tokens) VALUES ({_SLOT}, %s, %s) "
            "ON CONFLICT (slot) DO UPDATE SET docs = lex_stats.docs + excluded.docs, "
            "tokens = lex_stats.tokens + excluded.tokens",
            (docs, tokens),
        )


async def index(
    conn: psycopg.AsyncConnection[Any],
    docs: Sequence[tuple[int, str, Sequence[str]]],
    old: Sequence[tuple[int, str, Sequence[str]]] = (),
) -> None:
    """Index ``(seq, scope_tok, document tokens)`` rows (the records already hold their
    ``lex_tokens``), replacing the postings of ``old`` rows; statistics kept in step."""
    df: Counter[str] = Counter()
    ndocs = tokens = 0
    if old:
        gone = await unindex_rows(conn, old)
        df.update({t: -n for t, n in gone[0].items()})
        ndocs -= gone[1]
        tokens -= gone[2]
    postings: list[tuple[str, str, int, int, int]] = []
    for seq, scope_tok, doc in docs:
        counts = Counter(doc)
        length = len(doc) + 1  # the scope token is one more token of the row
        postings.extend((scope_tok, token, seq, tf, length) for token, tf in sorted(counts.items()))
        df.update(counts.keys())
        ndocs += 1
        tokens += length
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
    await _bump_stats(conn, ndocs, tokens)


async def unindex_rows(
    conn: psycopg.AsyncConnection[Any], rows: Sequence[tuple[int, str, Sequence[str]]]
) -> tuple[Counter[str], int, int]:
    """Delete the postings of ``(seq, scope_tok, tokens)`` rows; return what to subtract."""
    df: Counter[str] = Counter()
    tokens = 0
    for seq, scope_tok, toks in rows:
        distinct = sorted(set(toks))
        if distinct:
            await conn.execute(
                "DELETE FROM lex_postings WHERE scope_tok = %s AND token = ANY(%s) AND seq = %s",
                (scope_tok, distinct, seq),
            )
        df.update(distinct)
        tokens += len(toks) + 1
    return df, len(rows), tokens


async def unindex(
    conn: psycopg.AsyncConnection[Any], rows: Sequence[tuple[int, str, Sequence[str]]]
) -> None:
    """Remove records from the index (purge), keeping the statistics in step."""
    df, docs, tokens = await unindex_rows(conn, rows)
    await _bump_df(conn, Counter({t: -n for t, n in df.items()}))
    await _bump_stats(conn, -docs, -tokens)
    await _drop_unused(conn, list(df))


async def _drop_unused(conn: psycopg.AsyncConnection[Any], tokens: Sequence[str]) -> None:
    """Delete the statistics rows of tokens no document holds any more (a purge): a term
    only the purged records had must not stay readable in ``lex_df``."""
    if tokens:
        await conn.execute(
            "DELETE FROM lex_df WHERE token IN (SELECT token FROM lex_df WHERE token = ANY(%s) "
            "GROUP BY token HAVING sum(df) <= 0)",
            (sorted(set(tokens)),),
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
    df = Counter(str(r["token"]) for r in gone)
    await _bump_df(conn, Counter({t: -n for t, n in df.items()}))
    if stats is not None:
        await _bump_stats(conn, -int(stats["n"]), -int(stats["t"]))
    await _drop_unused(conn, list(df))


async def statistics(
    conn: psycopg.AsyncConnection[Any], tokens: Sequence[str]
) -> tuple[int, int, dict[str, int]]:
    """``(rows, total tokens, df per token)``, table-wide."""
    stats = await (
        await conn.execute(
            "SELECT coalesce(sum(docs), 0) AS d, coalesce(sum(tokens), 0) AS t FROM lex_stats"
        )
    ).fetchone()
    docs, total = (int(stats["d"]), int(stats["t"])) if stats else (0, 0)
    df: dict[str, int] = {}
    if tokens:
        for r in await (
            await conn.execute(
                "SELECT token, sum(df) AS n FROM lex_df WHERE token = ANY(%s) GROUP BY token",
                (sorted(set(tokens)),),
            )
        ).fetchall():
            df[str(r["token"])] = int(r["n"])
    return docs, total, df


async def search_rows(
    conn: psycopg.AsyncConnection[Any],
    scope_tok: str,
    terms: Sequence[str],
    where: str,
    args: Sequence[Any],
    limit: int | None,
    *,
    columns: str = "r.*",
) -> list[dict[str, Any]]:
    """Matching records (every column plus ``score``), best first, ties by insertion.

    ``where``/``args`` restrict ``r`` (the records row) to the scope and the SQL filters.
    """
    phrases = fts5.query_phrases(terms)
    live = [(i, p) for i, p in enumerate(phrases) if p]
    if not live:
        return []
    if all(len(p) == 1 for _, p in live):
        return await _search_tokens(conn, scope_tok, live, where, args, limit, columns)
    wanted = sorted({t for _, p in live for t in p})
    docs, total, df = await statistics(conn, wanted)
    if docs == 0:
        return []
    avgdl = total / docs
    return await _search_phrases(
        conn, scope_tok, phrases, docs, avgdl, df, where, args, limit, columns
    )


# One statement (one round trip): the table-wide statistics, each token's idf, the user's
# postings scored by themselves (a posting carries its record's length), the best ``n`` kept,
# and only then their records read and checked against the scope and the filters (a LEFT
# JOIN: a row without a record did not pass). The idf and avgdl are computed in double
# precision with the operations of ``fts5.idf`` in the same order (``ln`` is the C
# library's ``log``, as Python's ``math.log``): bit-equal scores. With 2,000+ matches,
# reading every match's record was 77% of the statement (EXPLAIN ANALYZE).
_TOKENS = (
    "WITH st AS (SELECT coalesce(sum(docs), 0)::float8 AS n, "
    "coalesce(sum(tokens), 0)::float8 AS t FROM lex_stats), "
    "raw AS (SELECT u.ord, u.token, ln((st.n - d.df + 0.5::float8) / (d.df + 0.5::float8)) "
    "AS x FROM unnest(%s::int[], %s::text[]) AS u(ord, token) CROSS JOIN st "
    "CROSS JOIN LATERAL (SELECT coalesce(sum(df), 0)::float8 AS df FROM lex_df "
    "WHERE lex_df.token = u.token) d), "
    "q AS (SELECT ord, token, CASE WHEN x > 0.0::float8 THEN x ELSE '1e-6'::float8 END AS idf "
    "FROM raw), "
    "hits AS (SELECT p.seq, q.ord, q.idf * ((p.tf::float8 * %s::float8) / "
    "(p.tf::float8 + %s::float8 * (%s::float8 + %s::float8 * p.len::float8 "
    "/ (SELECT t / nullif(n, 0.0::float8) FROM st)))) AS part "
    "FROM q JOIN lex_postings p ON p.scope_tok = %s AND p.token = q.token), "
    "scored AS MATERIALIZED (SELECT seq, sum(part ORDER BY ord) AS score FROM hits "
    "GROUP BY seq{top}) "
    "SELECT {columns}, s.score FROM scored s "
    "LEFT JOIN records r ON r.seq = s.seq AND {where} "
    "ORDER BY s.score DESC, s.seq"
)
_SLACK = 32  # hits ranked beyond k for those the scope's other parts or the filters drop


async def _search_tokens(
    conn: psycopg.AsyncConnection[Any],
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
            [i for i, _ in live],
            [p[0] for _, p in live],
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
            # Rows anywhere in the table holding the phrase: a scan, on this rare path only.
            rows = await (
                await conn.execute(
                    "SELECT lex_tokens FROM records WHERE lex_tokens @> %s", (list(p),)
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
