"""The lexical index: one FTS5 table per tenant, and query text user input cannot bend.

Each tenant's records are indexed in a table of their own (:func:`table`), because FTS5's
``bm25`` reads its statistics (rows, average length, rows holding a term) from the whole
table: in one shared table a tenant's scores, and so the order of its hits, would move with
what other tenants store, and a tenant could learn whether a word is common in other
tenants' records by searching its own (issue 9, "tenant isolation"). A tenant's table is
created by its first write; a tenant without one has nothing to match.

Terms come pre-tokenised by :func:`memstrata.search.tokenize.tokenize`; each is quoted as
an FTS5 string (double quotes doubled), so operators, column names and punctuation in a
term are matched literally. The match is confined to one user by the scope token column::

    scope_tok : "s1a2b..." AND terms : ("t1" OR "t2" ...)

and ranked with ``bm25(lexical, 0.0, 1.0)`` so the scope column adds nothing to a score.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sqlite3
from collections.abc import Sequence
from typing import Any

__all__ = [
    "BM25_WEIGHTS",
    "TOKENIZE",
    "create",
    "exists",
    "match_expression",
    "quote_term",
    "ranked",
    "table",
    "tables",
    "terms_text",
]

# Terms arrive pre-tokenised (space-joined); scope_tok confines a MATCH to one user.
TOKENIZE = "tokenize = 'unicode61 remove_diacritics 0'"
_PREFIX = "lex_"

# bm25() weights per column (scope_tok, terms); FTS5's bm25 is "lower is better".
BM25_WEIGHTS = "0.0, 1.0"


@functools.lru_cache(maxsize=4096)
def table(tenant: str) -> str:
    """The name of ``tenant``'s FTS5 table: hashed, so no raw tenant id is in the schema
    and the name is always a safe SQL identifier."""
    return _PREFIX + hashlib.blake2b(tenant.encode(), digest_size=10).hexdigest()


def create(conn: sqlite3.Connection, tenant: str) -> str:
    """Create ``tenant``'s table if it is missing (inside the caller's transaction)."""
    name = table(tenant)
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5 (scope_tok, terms, {TOKENIZE})"
    )
    return name


def exists(conn: sqlite3.Connection, tenant: str) -> bool:
    """Whether ``tenant`` has a table. A probe of the table itself (3.8 µs, the statement
    cached) rather than a lookup in ``sqlite_master`` (49 µs with 50 tenants: a scan)."""
    try:
        conn.execute(f"SELECT 1 FROM {table(tenant)} LIMIT 0")
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return False
        raise
    return True


def tables(conn: sqlite3.Connection) -> list[str]:
    """Every tenant's table (FTS5's own shadow tables excluded)."""
    return [
        str(r[0])
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB ? "
            "AND sql LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name",
            (_PREFIX + "*",),
        )
    ]


def quote_term(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def terms_text(terms: Sequence[str]) -> str:
    """What is indexed for a record: its terms joined by spaces (no re-tokenising)."""
    return " ".join(t for t in terms if t and not t.isspace())


def match_expression(scope_tok: str, terms: Sequence[str]) -> str | None:
    """The MATCH expression, or ``None`` when no usable term is left (nothing can match)."""
    unique = list(dict.fromkeys(t for t in terms if t and not t.isspace()))
    if not unique:
        return None
    body = " OR ".join(quote_term(t) for t in unique)
    return f"scope_tok : {quote_term(scope_tok)} AND terms : ({body})"


# The index alone, best first: no record is read for a row that cannot make the top.
_TOP = "SELECT rowid, bm25({t}, {w}) FROM {t} WHERE {t} MATCH ? ORDER BY 2, 1 LIMIT ?"
_SLACK = 32  # rows fetched beyond k for those the scope's other parts or the filters drop


def ranked(
    conn: sqlite3.Connection, name: str, expr: str, where: str, args: Sequence[Any], k: int
) -> list[tuple[str, float]]:
    """The ids of the best ``k`` records matching ``expr`` and ``where`` (over ``records
    r``), each with its score (``-bm25``), best first and ties by insertion: what one join
    of the index with ``records`` ordered by ``bm25, seq`` gives, without reading the record
    of every match.

    ``name`` is the tenant's table. The index ranks its matches by itself (``bm25`` depends
    on the matched row and the tenant's table-wide statistics only); the records of the
    best ``n`` are then read and checked against ``where``. When fewer than ``k`` pass and
    the index had more than ``n`` matches, ``n`` grows and the index is asked again, so the
    answer is always that of the full join.
    The admitted records come back as one row of two JSON arrays (seqs, ids): one step of
    the statement instead of one per record (each step is a trip out of and back into the
    interpreter lock, which a busy event loop holds), and no row object per record.
    """
    n = k + _SLACK
    top = _TOP.format(t=name, w=BM25_WEIGHTS)
    while True:
        hits = conn.execute(top, (expr, n)).fetchall()
        if not hits:
            return []
        seqs = "[" + ",".join(str(int(h[0])) for h in hits) + "]"
        # CROSS JOIN keeps this order (each hit looks up its record by seq); left to
        # itself the planner scans the user's records by the scope index (30x slower).
        found, ids = conn.execute(
            "SELECT json_group_array(r.seq), json_group_array(r.id) FROM json_each(?) AS hit "
            f"CROSS JOIN records r ON r.seq = hit.value WHERE {where}",
            [seqs, *args],
        ).fetchone()
        admitted: dict[int, str] = dict(zip(json.loads(found), json.loads(ids), strict=True))
        out = [(admitted[seq], -float(rank)) for seq, rank in hits if seq in admitted]
        if len(out) >= k or len(hits) < n:
            return out[:k]
        n *= 8
