"""The lexical index: postings keyed by user, statistics kept per tenant, FTS5's ``bm25``.

A search reads the postings of the searching user only, so its cost follows that user's
matches and never the size of other users' history (schema 10; before it, one FTS5 table
per tenant walked the doclists of every user of the tenant). The tables (migrations.py)::

    lex_tenants  (id, key, docs, tokens)       a tenant's rows and their total length
    lex_scopes   (id, scope_tok, tenant)       a user (the scope token) and their tenant
    lex_postings (scope, token, seq, tf, len)  WITHOUT ROWID, keyed (scope, token, seq)
    lex_df       (tenant, token, df)           WITHOUT ROWID: the tenant's rows holding token
    lex_docs     (seq, scope, len, terms)      what is indexed for a record, by its seq

The statistics stay each tenant's own, as with a table per tenant: what other tenants store
never moves a tenant's scores, and a tenant cannot learn from its own searches whether a
word is common elsewhere (issue 9, "tenant isolation"). They are kept up to date in the
write's transaction (SQLite has one writer). ``key`` is a hash of the tenant id and
``scope_tok`` a hash of (tenant, user): no raw id is in the index.

Scores are those FTS5 gave (``bm25(lexical, 0.0, 1.0)`` over ``scope_tok : "..." AND
terms : ("t1" OR ...)``), bit for bit: the tokens, formula and operation order are
:mod:`.fts5`'s, the statistics the rows, total tokens (a record's tokens plus its scope
token) and per-token row counts FTS5 read from the tenant's table. A query whose terms are
all single tokens (nearly every one) is scored in SQL from the postings alone; a term
``unicode61`` splits into a phrase of several tokens is scored in Python from the
candidates' indexed terms (:func:`_phrase_scores`).
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from memstrata.records import RecordType
from memstrata.scope import Scope
from memstrata.search.tokenize import tokenize
from memstrata.store import caller_bm25, fts5

from . import roles
from .codec import scope_token

__all__ = [
    "Doc",
    "caller_ranked",
    "document_tokens",
    "index",
    "indexed_terms",
    "public_owner",
    "ranked",
    "rebuild_public",
    "scope_id",
    "scored",
    "tenant_key",
    "terms_text",
    "traces",
    "unindex",
    "unindex_user",
]

Doc = tuple[int, str, str, Sequence[str]]  # (seq, tenant, user, terms)


def tenant_key(tenant: str) -> str:
    """The tenant's key in ``lex_tenants``: hashed (the name its FTS5 table had)."""
    return "lex_" + hashlib.blake2b(tenant.encode(), digest_size=10).hexdigest()


def terms_text(terms: Sequence[str]) -> str:
    """What is indexed for a record: its usable terms joined by spaces (no re-tokenising)."""
    return " ".join(fts5.usable(terms))


# Terms FTS5's tokenizer keeps whole (ASCII lower-case letters and digits), space-joined:
# their tokens are the terms themselves (most records; the others ask ``fts5.tokens``).
_PLAIN_TEXT = re.compile(r"[a-z0-9]+(?: [a-z0-9]+)*")


def document_tokens(text: str) -> list[str]:
    """The tokens FTS5 made of an indexed text (:func:`terms_text`), in order."""
    if _PLAIN_TEXT.fullmatch(text):
        return text.split(" ")
    return fts5.document_tokens(text.split())


# --- writes -------------------------------------------------------------------------------
# Each upsert returns the row's id (a DO UPDATE that changes nothing: DO NOTHING returns no
# row). A tenant's row and its users' scope rows go with its last indexed record
# (``_lower``).
_TENANT = (
    "INSERT INTO lex_tenants (key, docs, tokens) VALUES (?, 0, 0) "
    "ON CONFLICT (key) DO UPDATE SET docs = docs RETURNING id"
)
_SCOPE = (
    "INSERT INTO lex_scopes (scope_tok, tenant) VALUES (?, ?) "
    "ON CONFLICT (scope_tok) DO UPDATE SET tenant = excluded.tenant RETURNING id"
)
_STATS = "UPDATE lex_tenants SET docs = docs + ?, tokens = tokens + ? WHERE id = ?"
_DF = (
    "INSERT INTO lex_df (tenant, token, df) VALUES (?, ?, ?) "
    "ON CONFLICT (tenant, token) DO UPDATE SET df = df + excluded.df"
)


def index(conn: sqlite3.Connection, docs: Sequence[Doc]) -> None:
    """Index new documents (their seqs hold nothing yet), in the caller's transaction:
    the postings, the indexed terms and the tenants' statistics."""
    tenants: dict[str, int] = {}
    scopes: dict[tuple[str, str], int] = {}
    postings: list[tuple[int, str, int, int, int]] = []
    rows: list[tuple[int, int, int, str]] = []
    df: dict[int, Counter[str]] = {}  # tenant -> token -> rows
    totals: dict[int, list[int]] = {}  # tenant -> [rows, tokens]
    for seq, tenant, user, terms in docs:
        sid = scopes.get((tenant, user))
        if sid is None:
            sid, tid = _ids(conn, tenant, user)
            scopes[tenant, user], tenants[tenant] = sid, tid
            if tid not in df:
                df[tid], totals[tid] = Counter(), [0, 0]
        tid = tenants[tenant]
        text = terms_text(terms)
        tokens = document_tokens(text) if text else []
        counts = Counter(tokens)
        length = len(tokens) + 1  # the scope token is one more token of the row
        postings += [(sid, token, seq, tf, length) for token, tf in counts.items()]
        rows.append((seq, sid, length, text))
        df[tid].update(counts.keys())
        totals[tid][0] += 1
        totals[tid][1] += length
    conn.executemany("INSERT INTO lex_docs (seq, scope, len, terms) VALUES (?, ?, ?, ?)", rows)
    conn.executemany(
        "INSERT INTO lex_postings (scope, token, seq, tf, len) VALUES (?, ?, ?, ?, ?)", postings
    )
    for tid in sorted(df):
        conn.executemany(_DF, [(tid, token, n) for token, n in sorted(df[tid].items())])
        conn.execute(_STATS, (totals[tid][0], totals[tid][1], tid))
    _index_public(conn, [seq for seq, *_ in docs if seq > 0])


# --- the public part of a user's memory (caller29) ----------------------------------------
# A caller's search is scored over what the caller may read (store/caller_bm25.py). For the
# owner's public records those statistics (rows, total length, rows holding each token) were
# counted on every search by a scan of the owner's rows (~6 ms at 10k public records, where
# the owner's search costs 0.3). They are kept instead, in the write's transaction, as an
# index of their own: each active public record of (tenant, user) is indexed a second time,
# under seq ``-seq``, in a tenant of its own (:func:`public_owner`: a NUL, which no id holds,
# keeps it apart from every real tenant and user), with a message's own words (not the
# question's it is indexed under, as a caller reads it: caller_bm25.own_doc). That tenant's
# ``lex_tenants`` row, ``lex_df`` rows and postings are then the public part's statistics
# and postings, kept by the same code as every tenant's. :func:`index` and :func:`unindex`
# keep a record's public doc with its own; a write that changes a record's status or access
# without new terms calls :func:`sync_public`.
_MESSAGE = RecordType.MESSAGE.value
_PUBLIC_ROWS = (
    f"SELECT r.seq, r.tenant, r.user, CASE WHEN r.type = '{_MESSAGE}' THEN r.raw END, d.terms "
    "FROM json_each(?) AS j CROSS JOIN records r ON r.seq = j.value JOIN lex_docs d ON "
    "d.seq = r.seq WHERE r.status = 'active' AND r.visibility = 'public'"
)


def public_owner(tenant: str, user: str) -> tuple[str, str]:
    """The (tenant, user) the public part of ``user``'s memory is indexed under."""
    return f"{tenant}\x00public\x00{user}", ""


def _index_public(conn: sqlite3.Connection, seqs: Sequence[int]) -> None:
    """Index the public part's doc of each of these records that is active and public (none
    of them has one: :func:`sync_public` removes them first)."""
    docs: list[Doc] = []
    for chunk in _chunks(sorted(set(seqs))):
        for seq, tenant, user, raw, text in conn.execute(_PUBLIC_ROWS, (json.dumps(chunk),)):
            terms = tokenize(str(raw)) if raw is not None else str(text).split()
            docs.append((-int(seq), *public_owner(str(tenant), str(user)), terms))
    if docs:
        index(conn, docs)


def sync_public(conn: sqlite3.Connection, seqs: Sequence[int]) -> None:
    """The public part's docs of these records as the records are now (after a write that
    changed their status or access, in its transaction)."""
    unindex(conn, [-seq for seq in seqs])
    _index_public(conn, seqs)


def rebuild_public(conn: sqlite3.Connection) -> None:
    """Index the public part of every user's memory anew (a migration step)."""
    seqs = [int(seq) for (seq,) in conn.execute("SELECT seq FROM lex_docs WHERE seq < 0")]
    unindex(conn, seqs)
    last = 0
    while batch := [
        int(seq)
        for (seq,) in conn.execute(
            "SELECT seq FROM records WHERE seq > ? AND status = 'active' AND "
            "visibility = 'public' ORDER BY seq LIMIT 5000",
            (last,),
        )
    ]:
        _index_public(conn, batch)
        last = batch[-1]


def _ids(conn: sqlite3.Connection, tenant: str, user: str) -> tuple[int, int]:
    """The user's scope id and tenant id, their rows made if missing (one read when the
    user has written before: a write of one message runs few statements)."""
    tok = scope_token(tenant, user)
    found = conn.execute("SELECT id, tenant FROM lex_scopes WHERE scope_tok = ?", (tok,)).fetchone()
    if found is not None:
        return int(found[0]), int(found[1])
    tid = int(conn.execute(_TENANT, (tenant_key(tenant),)).fetchone()[0])
    return int(conn.execute(_SCOPE, (tok, tid)).fetchone()[0]), tid


def unindex(conn: sqlite3.Connection, seqs: Iterable[int]) -> None:
    """Remove these records from the index (a replace's old terms, a purge), keeping the
    statistics in step; a term no row of the tenant holds any more leaves ``lex_df``."""
    wanted = set(seqs)
    wanted |= {-seq for seq in wanted if seq > 0}  # their public part's docs (caller29)
    gone: list[tuple[int, int, int, int, str]] = []
    for chunk in _chunks(sorted(wanted)):
        gone += conn.execute(
            "SELECT d.seq, d.scope, s.tenant, d.len, d.terms FROM json_each(?) AS j "
            "CROSS JOIN lex_docs d ON d.seq = j.value JOIN lex_scopes s ON s.id = d.scope",
            (json.dumps(chunk),),
        ).fetchall()
    if not gone:
        return
    postings: list[tuple[int, str, int]] = []
    df: Counter[tuple[int, str]] = Counter()
    totals: Counter[tuple[int, int]] = Counter()
    for seq, sid, tid, length, text in gone:
        distinct = sorted(set(document_tokens(text)))
        postings.extend((sid, token, seq) for token in distinct)
        df.update((tid, token) for token in distinct)
        totals[tid, 0] += 1
        totals[tid, 1] += length
    conn.executemany("DELETE FROM lex_postings WHERE scope = ? AND token = ? AND seq = ?", postings)
    conn.executemany("DELETE FROM lex_docs WHERE seq = ?", [(g[0],) for g in gone])
    _lower(conn, df, totals)


def _lower(
    conn: sqlite3.Connection, df: Counter[tuple[int, str]], totals: Counter[tuple[int, int]]
) -> None:
    """Subtract removed rows from the statistics; drop the rows that reach zero."""
    keys = sorted(df.items())
    conn.executemany(
        "UPDATE lex_df SET df = df - ? WHERE tenant = ? AND token = ?",
        [(n, t, token) for (t, token), n in keys],
    )
    conn.executemany(
        "DELETE FROM lex_df WHERE tenant = ? AND token = ? AND df <= 0",
        [(t, token) for (t, token), _ in keys],
    )
    for tid in sorted({t for t, _ in totals}):
        conn.execute(_STATS, (-totals[tid, 0], -totals[tid, 1], tid))
        # The tenant's last row went: its users' scope rows go too (none holds a posting),
        # so no scope row names a tenant id that a new tenant may take.
        if conn.execute("DELETE FROM lex_tenants WHERE id = ? AND docs <= 0", (tid,)).rowcount:
            conn.execute("DELETE FROM lex_scopes WHERE tenant = ?", (tid,))


def scope_id(conn: sqlite3.Connection, tenant: str, user: str) -> int | None:
    """The user's id in ``lex_scopes`` (``None``: nothing of theirs was ever indexed)."""
    found = conn.execute(
        "SELECT id FROM lex_scopes WHERE scope_tok = ?", (scope_token(tenant, user),)
    ).fetchone()
    return None if found is None else int(found[0])


def traces(conn: sqlite3.Connection, scope_tok: str, sid: int | None) -> int:
    """Rows of a purged user left in the index (``purge_user``'s check; 0 after it): their
    scope row, postings (``sid``: their id before the purge) and the indexed terms of
    records that are gone (a scan of ``lex_docs``, as the purge's ``VACUUM`` reads all)."""
    return int(
        conn.execute(
            "SELECT (SELECT count(*) FROM lex_scopes WHERE scope_tok = ?1) + "
            "(SELECT count(*) FROM lex_postings WHERE scope = ?2) + "
            "(SELECT count(*) FROM lex_docs d WHERE NOT EXISTS "
            "(SELECT 1 FROM records r WHERE r.seq = abs(d.seq)))",
            (scope_tok, -1 if sid is None else sid),
        ).fetchone()[0]
    )


def unindex_user(conn: sqlite3.Connection, tenant: str, user: str) -> None:
    """Remove every row of one user (``purge_user``): postings, indexed terms, their share
    of the tenant's statistics and the user's scope row."""
    unindex(  # the user's public part (caller29), while their records are there to name it
        conn,
        [
            -int(seq)
            for (seq,) in conn.execute(
                "SELECT seq FROM records WHERE tenant = ? AND user = ?", (tenant, user)
            )
        ],
    )
    found = conn.execute(
        "SELECT id, tenant FROM lex_scopes WHERE scope_tok = ?", (scope_token(tenant, user),)
    ).fetchone()
    if found is None:
        return
    sid, tid = int(found[0]), int(found[1])
    df: Counter[tuple[int, str]] = Counter(
        {
            (tid, str(token)): int(n)
            for token, n in conn.execute(
                "SELECT token, count(*) FROM lex_postings WHERE scope = ? GROUP BY token", (sid,)
            )
        }
    )
    # The user's rows are found through their records (lex_docs has no index by scope).
    mine = "seq IN (SELECT seq FROM records WHERE tenant = ? AND user = ?)"
    docs, tokens = conn.execute(
        f"SELECT count(*), coalesce(sum(len), 0) FROM lex_docs WHERE {mine}", (tenant, user)
    ).fetchone()
    conn.execute("DELETE FROM lex_postings WHERE scope = ?", (sid,))
    conn.execute(f"DELETE FROM lex_docs WHERE {mine}", (tenant, user))
    conn.execute("DELETE FROM lex_scopes WHERE id = ?", (sid,))
    _lower(conn, df, Counter({(tid, 0): int(docs), (tid, 1): int(tokens)}))


def indexed_terms(conn: sqlite3.Connection, seqs: Sequence[int]) -> dict[int, str]:
    """The indexed text of each of these records that has one (dump, reterm)."""
    out: dict[int, str] = {}
    for chunk in _chunks(sorted(set(seqs))):
        out.update(
            (int(seq), str(text))
            for seq, text in conn.execute(
                "SELECT d.seq, d.terms FROM json_each(?) AS j CROSS JOIN lex_docs d "
                "ON d.seq = j.value",
                (json.dumps(chunk),),
            )
        )
    return out


def _chunks(items: list[int], size: int = 10_000) -> Iterable[list[int]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


# --- search -------------------------------------------------------------------------------
# The user's postings of the query's tokens, each scored by itself (a posting carries its
# row's length), summed per record in phrase order: ``coalesce(p0, 0.0) + coalesce(p1, 0.0)
# + ...`` left to right is FTS5's loop (a phrase the row lacks adds 0.0, which changes no
# double), written out rather than left to ``sum()``, whose order within a group SQLite
# does not promise (and whose algorithm changed in 3.43). The idfs and avgdl come in as
# parameters, computed by :func:`fts5.idf` as the C code does.
_PART = "q.idf * ((p.tf * ?) / (p.tf + ? * (? + ? * p.len / ?)))"
_SCORE = (
    "WITH q (ord, token, idf) AS (VALUES {values}), "
    "hits AS (SELECT p.seq AS seq, q.ord AS ord, {part} AS part FROM q "
    "JOIN lex_postings p ON p.scope = ? AND p.token = q.token) "
    "SELECT seq, {total} AS score FROM hits GROUP BY seq ORDER BY score DESC, seq{limit}"
)


def scored(
    conn: sqlite3.Connection, tenant: str, user: str, terms: Sequence[str], limit: int | None
) -> list[tuple[int, float]]:
    """The best ``limit`` (all when ``None``) of the user's records matching any of
    ``terms``, as ``(seq, score)``, best first and ties by insertion."""
    phrases = fts5.query_phrases(terms)
    live = [(i, p) for i, p in enumerate(phrases) if p]
    if not live:
        return []
    found = conn.execute(
        "SELECT s.id, t.id, t.docs, t.tokens FROM lex_scopes s JOIN lex_tenants t "
        "ON t.id = s.tenant WHERE s.scope_tok = ?",
        (scope_token(tenant, user),),
    ).fetchone()
    if found is None:
        return []
    sid, tid, docs, total = (int(v) for v in found)
    if docs <= 0:
        return []
    avgdl = total / docs
    wanted = sorted({t for _, p in live for t in p})
    df = _df(conn, tid, wanted)
    if any(len(p) > 1 for _, p in live):
        return _phrase_scores(conn, tenant, sid, phrases, docs, avgdl, df, limit)
    idfs = {token: fts5.idf(docs, df.get(token, 0)) for token in wanted}
    values = ", ".join("(?, ?, ?)" for _ in live)
    total_sql = " + ".join(f"coalesce(max(CASE ord WHEN {i} THEN part END), 0.0)" for i, _ in live)
    sql = _SCORE.format(
        values=values,
        part=_PART,
        total=total_sql,
        limit="" if limit is None else " LIMIT ?",
    )
    args: list[Any] = [v for i, p in live for v in (i, p[0], idfs[p[0]])]
    args += [fts5.K1_PLUS_1, fts5.K1, fts5.ONE_MINUS_B, fts5.B, avgdl, sid]
    if limit is not None:
        args.append(limit)
    return [(int(seq), float(score)) for seq, score in conn.execute(sql, args)]


def _df(conn: sqlite3.Connection, tid: int, tokens: Sequence[str]) -> dict[str, int]:
    return {
        str(token): int(n)
        for token, n in conn.execute(
            "SELECT token, df FROM lex_df WHERE tenant = ? AND token IN "
            f"({', '.join('?' * len(tokens))})",
            [tid, *tokens],
        )
    }


def _phrase_scores(
    conn: sqlite3.Connection,
    tenant: str,
    sid: int,
    phrases: list[tuple[str, ...]],
    docs: int,
    avgdl: float,
    df: dict[str, int],
    limit: int | None,
) -> list[tuple[int, float]]:
    """The rare path: a phrase of several tokens (e.g. a term with ``・`` inside). Its
    row count is found by reading the terms of every row of the tenant (a scan, on this
    path only, and skipped when one of its tokens is in no row); the candidates are the
    user's rows holding the first token of some phrase."""
    idfs: list[float] = []
    for p in phrases:
        if len(p) == 0:
            idfs.append(0.0)
        elif len(p) == 1:
            idfs.append(fts5.idf(docs, df.get(p[0], 0)))
        else:
            hits = 0
            if df.get(p[0], 0) and all(df.get(t, 0) for t in p):
                hits = sum(
                    1
                    for (text,) in conn.execute(
                        "SELECT d.terms FROM records r JOIN lex_docs d ON d.seq = r.seq "
                        "WHERE r.tenant = ?",
                        (tenant,),
                    )
                    if fts5.phrase_count(document_tokens(text), p)
                )
            idfs.append(fts5.idf(docs, hits))
    first = sorted({p[0] for p in phrases if p})
    rows = conn.execute(
        "SELECT d.seq, d.len, d.terms FROM lex_docs d WHERE d.seq IN (SELECT seq FROM "
        f"lex_postings WHERE scope = ? AND token IN ({', '.join('?' * len(first))}))",
        [sid, *first],
    ).fetchall()
    out: list[tuple[float, int]] = []
    for seq, length, text in rows:
        doc = document_tokens(text)
        score = 0.0
        matched = False
        for p, w in zip(phrases, idfs, strict=True):
            freq = fts5.phrase_count(doc, p)
            matched = matched or freq > 0
            score += fts5.term_score(w, float(freq), float(length), avgdl)
        if matched:
            out.append((-score, int(seq)))
    out.sort()
    best = [(seq, -neg) for neg, seq in out]
    return best if limit is None else best[:limit]


_SLACK = 32  # rows fetched beyond k for those the scope's other parts or the filters drop


def ranked(
    conn: sqlite3.Connection,
    tenant: str,
    user: str,
    terms: Sequence[str],
    where: str,
    args: Sequence[Any],
    k: int,
) -> list[tuple[str, float]]:
    """The ids of the best ``k`` records matching ``terms`` and ``where`` (over ``records
    r``), each with its score, best first and ties by insertion: what scoring every match
    and joining it with ``records`` gives, without reading the record of every match.

    The postings rank their matches by themselves; the records of the best ``n`` are then
    read and checked against ``where``. When fewer than ``k`` pass and there were more than
    ``n`` matches, ``n`` grows and the postings are asked again, so the answer is always
    that of the full join. The admitted records come back as one row of two JSON arrays
    (seqs, ids): one step of the statement instead of one per record.
    """
    n = k + _SLACK
    while True:
        hits = scored(conn, tenant, user, terms, n)
        if not hits:
            return []
        # CROSS JOIN keeps this order (each hit looks up its record by seq); left to
        # itself the planner scans the user's records by the scope index (30x slower).
        found, ids = conn.execute(
            "SELECT json_group_array(r.seq), json_group_array(r.id) FROM json_each(?) AS hit "
            f"CROSS JOIN records r ON r.seq = hit.value WHERE {where}",
            [json.dumps([seq for seq, _ in hits]), *args],
        ).fetchone()
        admitted: dict[int, str] = dict(zip(json.loads(found), json.loads(ids), strict=True))
        out = [(admitted[seq], score) for seq, score in hits if seq in admitted]
        if len(out) >= k or len(hits) < n:
            return out[:k]
        n *= 8


# What a caller may read, in three parts, each checked by the caller's rule (``{readable}``,
# over ``records r``):
# - the records the index of readers names the caller for (``rr``, store/purged_reader.py:
#   every version written names its readers there), not public, read whole: ∝ what is
#   shared with the caller by name;
# - for a caller with roles, the owner's records whose access lists one of them, not public
#   nor named, read whole: found by the rows the index of readers keeps for each role a
#   record is shared with (roles.py, role29; before, a scan of the owner's rows, whose time
#   grew with the owner's unshared records), so ∝ what is shared with the caller's roles;
# - the owner's public records: the public part's own index (:func:`public_owner`, kept by
#   every write), its statistics read as a tenant's and its postings scored in SQL as the
#   owner's own (the best ``k``, as :func:`ranked`), so a caller of a wholly public memory
#   pays what the owner pays (caller29; caller28 counted them by a scan, ~6 ms at 10k).
# A message counts by its own words in each part, in the mean length too (caller28 counted
# its indexed length there, the question's words included: one number over all the shared
# replies, which told the length of questions the caller may not read).
_DOC = "r.seq, r.id, d.terms, CASE WHEN r.type = '{message}' THEN r.raw END, ({where})"
_NAMED = (
    f"SELECT {_DOC} FROM rr JOIN records r ON r.tenant = rr.t AND r.user = rr.u AND "
    "r.id = rr.i JOIN lex_docs d ON d.seq = r.seq WHERE rr.t = ? AND rr.r = ? AND rr.u = ? "
    "AND r.visibility != 'public' AND {readable}"
)
_ROLED = (
    f"SELECT {_DOC} FROM (SELECT DISTINCT i FROM rr WHERE t = ? AND r IN ({{marks}}) AND u = ?) "
    "AS m CROSS JOIN records r ON r.tenant = ? AND r.user = ? AND r.id = m.i "
    "JOIN lex_docs d ON d.seq = r.seq WHERE r.visibility != 'public' "
    "AND NOT EXISTS (SELECT 1 FROM rr WHERE rr.t = r.tenant AND rr.r = ? AND rr.u = r.user "
    "AND rr.i = r.id) AND {readable}"
)
# A public doc read whole (a query holding a phrase of several tokens): its record by -seq.
_PUBLIC_DOCS = (
    "SELECT r.seq, r.id, d.terms, NULL, ({where}) FROM lex_docs d CROSS JOIN records r ON "
    "r.seq = -d.seq WHERE d.seq IN (SELECT seq FROM lex_postings WHERE scope = ? AND token IN "
    "({marks}))"
)
_PUBLIC_SCORE = (
    "WITH q (ord, token, idf) AS (VALUES {values}), "
    "hits AS (SELECT p.seq AS seq, q.ord AS ord, {part} AS part FROM q "
    "JOIN lex_postings p ON p.scope = ? AND p.token = q.token) "
    "SELECT -seq, {total} AS score FROM hits GROUP BY seq ORDER BY score DESC, seq DESC{limit}"
)

Hit = tuple[int, str, float]  # (seq, id, score)


def caller_ranked(
    conn: sqlite3.Connection,
    scope: Scope,
    terms: Sequence[str],
    readable: tuple[str, Sequence[Any]],
    where: tuple[str, Sequence[Any]],
    k: int | None = None,
) -> list[Hit]:
    """A caller's best ``k`` matches of ``terms`` (all: ``None``) :mod:`memstrata.store.
    caller_bm25`, as ``(seq, id, score)``, best first and ties by insertion: scored with the
    statistics of the records ``readable`` admits (over ``records r``: the caller's rule
    over the owner's records), kept if ``where`` admits them too (the scope's other parts
    and the filters). Reads what is shared with the caller by name (and by role), the public
    part's statistics and its postings of the query's tokens; nothing of the tenant's
    statistics nor of the owner's unshared records' terms."""
    phrases = [p for p in fts5.query_phrases(terms) if p]
    if not phrases:
        return []
    fill = {"message": RecordType.MESSAGE.value, "where": where[0], "readable": readable[0]}
    rows = conn.execute(
        _NAMED.format(**fill),
        [*where[1], scope.tenant, scope.caller, scope.user, *readable[1]],
    ).fetchall()
    if scope.roles:
        readers = roles.markers(sorted(scope.roles))
        rows += conn.execute(
            _ROLED.format(**fill, marks=", ".join("?" * len(readers))),
            [*where[1], scope.tenant, *readers, scope.user, scope.tenant, scope.user]
            + [scope.caller, *readable[1]],
        ).fetchall()
    tenant, user = public_owner(scope.tenant, scope.user)
    public = conn.execute(
        "SELECT s.id, t.id, t.docs, t.tokens FROM lex_scopes s JOIN lex_tenants t "
        "ON t.id = s.tenant WHERE s.scope_tok = ?",
        (scope_token(tenant, user),),
    ).fetchone()
    tokens = sorted({t for p in phrases for t in p})
    docs, ids = _docs(rows)
    n_docs = len(docs) + (int(public[2]) if public is not None else 0)
    total = sum(n for _, n, _ in docs) + (int(public[3]) if public is not None else 0)
    if n_docs <= 0:
        return []
    if public is not None and any(len(p) > 1 for p in phrases):
        # rare: a phrase's rows are counted from the docs, here every public doc holding a
        # token of the query read whole (∝ the public part's matches, as caller28 read them)
        marks = ", ".join("?" * len(tokens))
        more, more_ids = _docs(
            conn.execute(
                _PUBLIC_DOCS.format(where=where[0], marks=marks), [*where[1], public[0], *tokens]
            ).fetchall()
        )
        ids.update(more_ids)
        ranked = caller_bm25.rank(sorted(docs + more), terms, (n_docs, total))
        best = [(seq, ids[seq], score) for seq, score in ranked if seq in ids]
        return best if k is None else best[:k]
    avgdl = total / n_docs
    df = _df(conn, int(public[1]), tokens) if public is not None else {}
    held = Counter(t for _, _, doc in docs for t in set(doc))
    idfs = [fts5.idf(n_docs, df.get(p[0], 0) + held[p[0]]) for p in phrases]
    out: list[tuple[float, int, str]] = []
    for seq, length, doc in docs:
        if seq not in ids:
            continue
        counts = Counter(doc)
        if not any(counts[p[0]] for p in phrases):
            continue
        score = 0.0
        for p, w in zip(phrases, idfs, strict=True):
            score += fts5.term_score(w, float(counts[p[0]]), float(length), avgdl)
        out.append((-score, seq, ids[seq]))
    if public is not None:
        out += _public_hits(conn, int(public[0]), phrases, idfs, avgdl, where, k)
    out.sort()
    best = [(seq, rid, -neg) for neg, seq, rid in out]
    return best if k is None else best[:k]


def _docs(rows: Iterable[Sequence[Any]]) -> tuple[list[tuple[int, int, list[str]]], dict[int, str]]:
    """``(seq, length, tokens)`` of each row read whole (a message by its own words), in
    insertion order, and the ids of those ``where`` admits."""
    docs: list[tuple[int, int, list[str]]] = []
    ids: dict[int, str] = {}
    for seq, rid, text, raw, ok in sorted(rows, key=lambda r: int(r[0])):
        if ok:
            ids[int(seq)] = str(rid)
        if raw is None:
            tokens = document_tokens(str(text)) if text else []
            docs.append((int(seq), len(tokens) + 1, tokens))
        else:
            docs.append(caller_bm25.own_doc(int(seq), str(raw)))
    return docs, ids


def _public_hits(
    conn: sqlite3.Connection,
    sid: int,
    phrases: list[tuple[str, ...]],
    idfs: list[float],
    avgdl: float,
    where: tuple[str, Sequence[Any]],
    k: int | None,
) -> list[tuple[float, int, str]]:
    """The public part's best ``k`` matches (all: ``None``) that ``where`` admits, scored in
    SQL from its postings as :func:`scored` scores the owner's: ``(-score, seq, id)``. When
    ``where`` drops some of the best ``n``, ``n`` grows (as :func:`ranked`): what it drops
    are records the caller may read, so the rounds tell nothing of unshared ones."""
    values = ", ".join("(?, ?, ?)" for _ in phrases)
    total_sql = " + ".join(
        f"coalesce(max(CASE ord WHEN {i} THEN part END), 0.0)" for i in range(len(phrases))
    )
    base: list[Any] = [v for i, p in enumerate(phrases) for v in (i, p[0], idfs[i])]
    base += [fts5.K1_PLUS_1, fts5.K1, fts5.ONE_MINUS_B, fts5.B, avgdl, sid]
    n = None if k is None else k + _SLACK
    while True:
        sql = _PUBLIC_SCORE.format(
            values=values, part=_PART, total=total_sql, limit="" if n is None else " LIMIT ?"
        )
        hits = conn.execute(sql, base if n is None else [*base, n]).fetchall()
        if not hits:
            return []
        found, ids = conn.execute(
            "SELECT json_group_array(r.seq), json_group_array(r.id) FROM json_each(?) AS hit "
            f"CROSS JOIN records r ON r.seq = hit.value WHERE {where[0]}",
            [json.dumps([int(seq) for seq, _ in hits]), *where[1]],
        ).fetchone()
        admitted: dict[int, str] = dict(zip(json.loads(found), json.loads(ids), strict=True))
        out = [(-float(score), int(seq), admitted[seq]) for seq, score in hits if seq in admitted]
        if n is None or k is None or len(out) >= k or len(hits) < n:
            return out
        n *= 8
