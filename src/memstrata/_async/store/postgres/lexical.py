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
from psycopg import pq
from psycopg.rows import dict_row

from memstrata.records import RecordType
from memstrata.scope import Scope
from memstrata.search.tokenize import tokenize
from memstrata.store import caller_bm25, fts5
from memstrata.store.sqlite.codec import scope_token

__all__ = [
    "COPY_FROM",
    "SLOTS",
    "Doc",
    "caller_rows",
    "index",
    "index_public",
    "public_tok",
    "rebuild_public",
    "search_rows",
    "sync_public",
    "unindex",
    "unindex_scope",
]

Doc = tuple[int, str, str, Sequence[str]]  # (seq, tenant, scope_tok, tokens)

SLOTS = 16
# Fewer postings than this (a few messages' worth) are one INSERT, not a COPY: a COPY
# costs its own round trips and cannot run in pipeline mode (store.py's inserts: there
# they are one INSERT whatever their number).
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
    conn: psycopg.AsyncConnection[Any],
    docs: Sequence[Doc],
    old: Sequence[Doc] = (),
    *,
    keep_public: bool = True,
) -> None:
    """Index documents (the records already hold their ``lex_tokens``), replacing the
    postings of ``old`` ones; their tenants' statistics kept in step, and the records'
    public part (:func:`sync_public`; not by a migration step before that part's tables)."""
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
    # COPY: ~15 postings per message, 15M for 1M messages. Not inside a pipeline (an add, a
    # few turns, store.py's inserts), which cannot send one: a note of 1,000 different words
    # was refused there ("COPY cannot be used in pipeline mode"; session 31)
    piped = conn.pgconn.pipeline_status != pq.PipelineStatus.OFF
    if len(postings) >= COPY_FROM and not piped:
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
    if keep_public:
        await sync_public(conn, [seq for seq, *_ in docs])


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
    """Remove records from the index (purge), keeping the statistics in step, and their
    public part's docs (:func:`sync_public` adds them again if the records are still there:
    a reterm's ``index``)."""
    df, totals = _negated(*await unindex_rows(conn, rows))
    await _bump_df(conn, df)
    await _bump_stats(conn, totals)
    await _drop_unused(conn, list(df))
    await _unindex_public(conn, [seq for seq, *_ in rows])


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
    """Remove every posting of one user (purge_user), keeping the statistics in step, and
    the public part of their memory.

    Runs before the user's records are deleted: their lengths are read from them.
    """
    mine = "SELECT seq FROM lex_public WHERE owner_tok = %s"
    await _unindex_public(
        conn, [int(r["seq"]) for r in await _rows(conn, mine, (public_tok(tenant, user),))]
    )
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


# --- the public part of a user's memory (caller29) ----------------------------------------
# A caller's search is scored over what the caller may read (store/caller_bm25.py). For the
# owner's public records those statistics were counted on every search over the partial
# index of schema 22 (~15 ms at 10k public records, where the owner's search costs 1–2). They
# are kept instead, in the write's transaction (schema 24): each active public record's doc
# (a message by its own words, as a caller reads it: caller_bm25.own_doc) in ``lex_public``,
# its postings in ``lex_postings`` under seq ``-seq`` and the owner's public token
# (:func:`public_tok`: ``p`` where a user's scope token has ``s``), and its part's rows,
# length and rows per token in ``lex_public_stats`` / ``lex_public_df``, counted in slots as
# a tenant's are. :func:`index` and :func:`unindex` keep a record's public doc with its own;
# a write that changes a record's status or access without new terms calls
# :func:`sync_public`.
_PUBLIC_ROWS = (
    'SELECT seq, tenant, "user", CASE WHEN type = %s THEN raw END AS own, lex_tokens '
    "FROM records WHERE seq = ANY(%s) AND status = 'active' AND visibility = 'public'"
)


async def _rows(
    conn: psycopg.AsyncConnection[Any], query: str, params: Sequence[Any]
) -> list[dict[str, Any]]:
    async with conn.cursor(row_factory=dict_row) as cur:  # a migration's connection too
        await cur.execute(query, params)
        return await cur.fetchall()


def public_tok(tenant: str, user: str) -> str:
    """The scope token the public part of ``user``'s memory is indexed under."""
    return "p" + scope_token(tenant, user)[1:]


async def _public_bump(
    conn: psycopg.AsyncConnection[Any],
    df: Counter[tuple[str, str]],
    totals: dict[str, tuple[int, int]],
) -> None:
    items = sorted((k, d) for k, d in df.items() if d)
    if items:
        await conn.execute(
            f"INSERT INTO lex_public_df (owner_tok, token, slot, df) SELECT n, t, {_SLOT}, d "
            "FROM unnest(%s::text[], %s::text[], %s::bigint[]) WITH ORDINALITY AS u(n, t, d, o) "
            "ORDER BY o ON CONFLICT (owner_tok, token, slot) DO UPDATE SET "
            "df = lex_public_df.df + excluded.df",
            ([k[0] for k, _ in items], [k[1] for k, _ in items], [d for _, d in items]),
        )
    for owner, (docs, tokens) in sorted(totals.items()):
        if docs or tokens:
            await conn.execute(
                "INSERT INTO lex_public_stats (owner_tok, slot, docs, tokens) VALUES "
                f"(%s, {_SLOT}, %s, %s) ON CONFLICT (owner_tok, slot) DO UPDATE SET "
                "docs = lex_public_stats.docs + excluded.docs, "
                "tokens = lex_public_stats.tokens + excluded.tokens",
                (owner, docs, tokens),
            )
    gone = sorted({k for k, d in items if d < 0})
    for owner in sorted({o for o, _ in gone}):
        await conn.execute(
            "DELETE FROM lex_public_df WHERE owner_tok = %s AND token IN (SELECT token FROM "
            "lex_public_df WHERE owner_tok = %s AND token = ANY(%s) GROUP BY token "
            "HAVING sum(df) <= 0)",
            (owner, owner, sorted({t for o, t in gone if o == owner})),
        )
    for owner, (docs, _) in sorted(totals.items()):
        if docs < 0:
            await conn.execute(
                "DELETE FROM lex_public_stats WHERE owner_tok = %s AND (SELECT sum(docs) FROM "
                "lex_public_stats WHERE owner_tok = %s) <= 0",
                (owner, owner),
            )


async def _unindex_public(conn: psycopg.AsyncConnection[Any], seqs: Sequence[int]) -> None:
    """Remove the public part's docs of these records (those that have one)."""
    wanted = sorted({int(s) for s in seqs if s > 0})
    if not wanted:
        return
    gone = await _rows(
        conn,
        "DELETE FROM lex_public WHERE seq = ANY(%s) RETURNING seq, owner_tok, tokens",
        (wanted,),
    )
    df: Counter[tuple[str, str]] = Counter()
    totals: dict[str, tuple[int, int]] = {}
    for r in sorted(gone, key=lambda r: int(r["seq"])):
        toks = list(r["tokens"])
        distinct = sorted(set(toks))
        if distinct:
            await conn.execute(
                "DELETE FROM lex_postings WHERE scope_tok = %s AND token = ANY(%s) AND seq = %s",
                (r["owner_tok"], distinct, -int(r["seq"])),
            )
        df.update((str(r["owner_tok"]), t) for t in distinct)
        _add(totals, str(r["owner_tok"]), 1, len(toks) + 1)
    await _public_bump(conn, *_negated(df, totals))


async def index_public(conn: psycopg.AsyncConnection[Any], seqs: Sequence[int]) -> None:
    """Index the public part's doc of each of these records that is active and public (none
    of them has one: new records, or :func:`sync_public` removed it)."""
    wanted = sorted({int(s) for s in seqs if s > 0})
    if not wanted:
        return
    rows = await _rows(conn, _PUBLIC_ROWS, (RecordType.MESSAGE.value, wanted))
    docs: list[Doc] = []
    for r in rows:
        doc = (
            list(r["lex_tokens"])
            if r["own"] is None
            else fts5.document_tokens(tokenize(str(r["own"])))
        )
        docs.append((-int(r["seq"]), public_tok(r["tenant"], r["user"]), "", doc))
    if not docs:
        return
    async with conn.cursor() as cur:
        await cur.executemany(
            "INSERT INTO lex_public (seq, owner_tok, tokens) VALUES (%s, %s, %s)",
            [(-seq, owner, tokens) for seq, owner, _, tokens in docs],
        )
    postings = [
        (owner, token, seq, tf, len(tokens) + 1)
        for seq, owner, _, tokens in docs
        for token, tf in sorted(Counter(tokens).items())
    ]
    if postings:
        await conn.execute(_INSERT_POSTINGS, [list(col) for col in zip(*postings, strict=True)])
    df: Counter[tuple[str, str]] = Counter()
    totals: dict[str, tuple[int, int]] = {}
    for _, owner, _, tokens in docs:
        df.update((owner, t) for t in set(tokens))
        _add(totals, owner, 1, len(tokens) + 1)
    await _public_bump(conn, df, totals)


async def sync_public(conn: psycopg.AsyncConnection[Any], seqs: Sequence[int]) -> None:
    """The public part's docs of these records as the records are now (after a write that
    changed them, in its transaction)."""
    await _unindex_public(conn, seqs)
    await index_public(conn, seqs)


async def rebuild_public(conn: psycopg.AsyncConnection[Any]) -> None:
    """Index the public part of every user's memory anew (a migration step)."""
    await _unindex_public(
        conn, [int(r["seq"]) for r in await _rows(conn, "SELECT seq FROM lex_public", ())]
    )
    last = 0
    while batch := [
        int(r["seq"])
        for r in await _rows(
            conn,
            "SELECT seq FROM records WHERE seq > %s AND status = 'active' AND "
            "visibility = 'public' ORDER BY seq LIMIT 5000",
            (last,),
        )
    ]:
        await index_public(conn, batch)
        last = batch[-1]


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


# What a caller may read, in three parts, each checked by the caller's rule (``{readable}``):
# - the records the index of readers names the caller for (``record_readers``,
#   store/purged_reader.py: its trigger adds every current row's readers), not public, read
#   whole: ∝ what is shared with the caller by name;
# - for a caller with roles, the owner's records whose access lists roles, not public nor
#   named, read whole (the partial index ``records_shared_roles`` of schema step 25 finds
#   them, role29: step 22's held the public records too, all read to be dropped; the
#   condition is written out so that the planner proves it implies the index's);
# - the owner's public records: the public part's own index (schema 24, :func:`public_tok`),
#   its statistics read as a tenant's and its postings scored in SQL as the owner's own (the
#   best ``k``), so a caller of a wholly public memory pays what the owner pays (caller29;
#   caller28 counted them over the partial index, ~15 ms at 10k).
# A message counts by its own words in each part, in the mean length too (caller28 counted
# its indexed length there, the question's words included).
_DOC = "r.seq, r.lex_tokens, CASE WHEN r.type = '{message}' THEN r.raw END AS own, ({where}) AS ok"
_NAMED = (
    f"SELECT {_DOC} FROM record_readers rr JOIN records r ON r.tenant = rr.tenant AND "
    'r."user" = rr."user" AND r.id = rr.id WHERE rr.tenant = %s AND rr.reader = %s AND '
    "rr.\"user\" = %s AND r.visibility != 'public' AND {readable}"
)
_ROLED = (
    f'SELECT {_DOC} FROM records r WHERE r.tenant = %s AND r."user" = %s AND '
    "r.visibility != 'public' AND strpos(r.access, '\"allowed_roles\":[]') = 0 AND NOT EXISTS "
    "(SELECT 1 FROM record_readers rr WHERE rr.tenant = r.tenant AND rr.reader = %s AND "
    'rr."user" = r."user" AND rr.id = r.id) AND {readable}'
)
_PUBLIC_STATS = (
    "SELECT coalesce(sum(docs), 0) AS d, coalesce(sum(tokens), 0) AS t FROM lex_public_stats "
    "WHERE owner_tok = %s"
)
_PUBLIC_DF = (
    "SELECT token, sum(df) AS n FROM lex_public_df WHERE owner_tok = %s AND token = ANY(%s) "
    "GROUP BY token"
)
# A public doc read whole (a query holding a phrase of several tokens).
_PUBLIC_DOCS = (
    "SELECT lp.seq, lp.tokens AS lex_tokens, NULL AS own, ({where}) AS ok FROM lex_public lp "
    "JOIN records r ON r.seq = lp.seq WHERE lp.seq IN (SELECT -seq FROM lex_postings WHERE "
    "scope_tok = %s AND token = ANY(%s))"
)
# The public part's postings scored as _TOKENS scores the owner's (the same operations in
# the same order; the idfs and the mean length come in, computed over every part).
_PUBLIC_SCORE = (
    "WITH q AS MATERIALIZED (SELECT * FROM unnest(%s::int[], %s::text[], %s::float8[]) AS "
    "u(ord, token, idf)), "
    "hits AS (SELECT p.seq, q.ord, q.idf * ((p.tf::float8 * %s::float8) / "
    "(p.tf::float8 + %s::float8 * (%s::float8 + %s::float8 * p.len::float8 / %s::float8))) "
    "AS part FROM q JOIN lex_postings p ON p.scope_tok = %s AND p.token = q.token), "
    "scored AS MATERIALIZED (SELECT -seq AS seq, sum(part ORDER BY ord) AS score FROM hits "
    "GROUP BY seq ORDER BY score DESC, -seq{top}) "
    "SELECT s.seq, s.score, (SELECT count(*) FROM scored) AS ranked FROM scored s "
    "JOIN LATERAL (SELECT 1 FROM records r WHERE r.seq = s.seq AND {where} LIMIT 1) r "
    "ON true ORDER BY s.score DESC, s.seq"
)


async def caller_rows(
    conn: psycopg.AsyncConnection[Any],
    scope: Scope,
    terms: Sequence[str],
    readable: tuple[str, Sequence[Any]],
    where: tuple[str, Sequence[Any]],
    k: int | None,
    *,
    columns: str,
) -> list[dict[str, Any]]:
    """A caller's best ``k`` matches of ``terms`` (all: ``None``; ``columns`` of each plus
    ``score``), best first, ties by insertion: scored (:mod:`memstrata.store.caller_bm25`)
    with the statistics of the records ``readable`` admits (the caller's rule over the
    owner's records), kept if ``where`` admits them too (the scope's other parts and the SQL
    filters). Reads what is shared with the caller by name (and by role), the public part's
    statistics and its postings of the query's tokens, then the kept matches' ``columns``;
    nothing of the tenant's statistics nor of the owner's unshared records' tokens."""
    phrases = [p for p in fts5.query_phrases(terms) if p]
    if not phrases:
        return []
    fill = {"message": RecordType.MESSAGE.value, "where": where[0], "readable": readable[0]}
    rows = await _rows(
        conn,
        _NAMED.format(**fill),
        [*where[1], scope.tenant, scope.caller, scope.user, *readable[1]],
    )
    if scope.roles:
        rows += await _rows(
            conn,
            _ROLED.format(**fill),
            [*where[1], scope.tenant, scope.user, scope.caller, *readable[1]],
        )
    docs, kept = _docs(rows)
    owner = public_tok(scope.tenant, scope.user)
    st = (await _rows(conn, _PUBLIC_STATS, (owner,)))[0]
    n_public, t_public = int(st["d"]), int(st["t"])
    n_docs = len(docs) + n_public
    total = sum(n for _, n, _ in docs) + t_public
    if n_docs <= 0:
        return []
    tokens = sorted({t for p in phrases for t in p})
    hits: list[tuple[int, float]]
    if n_public and any(len(p) > 1 for p in phrases):
        # rare: a phrase's rows are counted from the docs, here every public doc holding a
        # token of the query read whole (∝ the public part's matches)
        more, more_kept = _docs(
            await _rows(conn, _PUBLIC_DOCS.format(where=where[0]), [*where[1], owner, tokens])
        )
        kept |= more_kept
        ranked = caller_bm25.rank(sorted(docs + more), terms, (n_docs, total))
        hits = [(seq, score) for seq, score in ranked if seq in kept]
    else:
        avgdl = total / n_docs
        df = (
            {str(r["token"]): int(r["n"]) for r in await _rows(conn, _PUBLIC_DF, (owner, tokens))}
            if n_public
            else {}
        )
        held = Counter(t for _, _, doc in docs for t in set(doc))
        idfs = [fts5.idf(n_docs, df.get(p[0], 0) + held[p[0]]) for p in phrases]
        scored: list[tuple[float, int]] = []
        for seq, length, doc in docs:
            if seq not in kept:
                continue
            counts = Counter(doc)
            if not any(counts[p[0]] for p in phrases):
                continue
            score = 0.0
            for p, w in zip(phrases, idfs, strict=True):
                score += fts5.term_score(w, float(counts[p[0]]), float(length), avgdl)
            scored.append((-score, seq))
        if n_public:
            scored += await _public_hits(conn, owner, phrases, idfs, avgdl, where, k)
        scored.sort()
        hits = [(seq, -neg) for neg, seq in scored]
    if k is not None:
        hits = hits[:k]
    if not hits:
        return []
    found = {
        int(r["seq"]): r
        for r in await _rows(
            conn,
            f"SELECT {columns}, r.seq FROM records r WHERE r.seq = ANY(%s)",
            ([seq for seq, _ in hits],),
        )
    }
    return [{**found[seq], "score": score} for seq, score in hits if seq in found]


def _docs(rows: list[dict[str, Any]]) -> tuple[list[tuple[int, int, list[str]]], set[int]]:
    """``(seq, length, tokens)`` of each row read whole (a message by its own words), in
    insertion order, and the seqs ``where`` admits."""
    docs = [
        (int(r["seq"]), len(r["lex_tokens"]) + 1, list(r["lex_tokens"]))
        if r["own"] is None
        else caller_bm25.own_doc(int(r["seq"]), str(r["own"]))
        for r in sorted(rows, key=lambda r: int(r["seq"]))
    ]
    return docs, {int(r["seq"]) for r in rows if r["ok"]}


async def _public_hits(
    conn: psycopg.AsyncConnection[Any],
    owner: str,
    phrases: list[tuple[str, ...]],
    idfs: list[float],
    avgdl: float,
    where: tuple[str, Sequence[Any]],
    k: int | None,
) -> list[tuple[float, int]]:
    """The public part's best ``k`` matches (all: ``None``) that ``where`` admits, scored in
    SQL: ``(-score, seq)``. When ``where`` drops some of the best ``n``, ``n`` grows (as
    :func:`_search_tokens`): what it drops are records the caller may read."""
    n = None if k is None else k + _SLACK
    while True:
        params: list[Any] = [
            list(range(len(phrases))),
            [p[0] for p in phrases],
            idfs,
            fts5.K1_PLUS_1,
            fts5.K1,
            fts5.ONE_MINUS_B,
            fts5.B,
            avgdl,
            owner,
        ]
        if n is not None:
            params.append(n)
        top = "" if n is None else " LIMIT %s"
        # the LATERAL join drops what ``where`` refuses: ``ranked`` counts what was scored
        rows = await _rows(
            conn, _PUBLIC_SCORE.format(top=top, where=where[0]), [*params, *where[1]]
        )
        out = [(-float(r["score"]), int(r["seq"])) for r in rows]
        if n is None or k is None or len(out) >= k:
            return out
        ranked = int(rows[0]["ranked"]) if rows else await _ranked(conn, owner, phrases, n)
        if ranked < n:
            return out
        n *= 8


async def _ranked(
    conn: psycopg.AsyncConnection[Any], owner: str, phrases: list[tuple[str, ...]], n: int
) -> int:
    """How many public docs (at most ``n``) hold a token of the query."""
    found = await _rows(
        conn,
        "SELECT count(*) AS c FROM (SELECT DISTINCT seq FROM lex_postings WHERE scope_tok = %s "
        "AND token = ANY(%s) LIMIT %s) x",
        (owner, sorted({p[0] for p in phrases}), n),
    )
    return int(found[0]["c"])
