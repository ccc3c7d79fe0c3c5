"""FTS5 query text for lexical search, built so that user input cannot change its meaning.

Terms come pre-tokenised by :func:`memstrata.search.tokenize.tokenize`; each is quoted as
an FTS5 string (double quotes doubled), so operators, column names and punctuation in a
term are matched literally. The match is confined to one user by the scope token column::

    scope_tok : "s1a2b..." AND terms : ("t1" OR "t2" ...)

and ranked with ``bm25(lexical, 0.0, 1.0)`` so the scope column adds nothing to a score.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

__all__ = ["BM25_WEIGHTS", "match_expression", "quote_term", "ranked", "terms_text"]

# bm25() weights per column (scope_tok, terms); FTS5's bm25 is "lower is better".
BM25_WEIGHTS = "0.0, 1.0"


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
_TOP = (
    f"SELECT rowid, bm25(lexical, {BM25_WEIGHTS}) FROM lexical WHERE lexical MATCH ? "
    "ORDER BY 2, 1 LIMIT ?"
)
_SLACK = 32  # rows fetched beyond k for those the scope's other parts or the filters drop


def ranked(
    conn: sqlite3.Connection, expr: str, where: str, args: Sequence[Any], k: int
) -> list[tuple[str, float]]:
    """The ids of the best ``k`` records matching ``expr`` and ``where`` (over ``records
    r``), each with its score (``-bm25``), best first and ties by insertion: what one join
    of the index with ``records`` ordered by ``bm25, seq`` gives, without reading the record
    of every match.

    The index ranks its matches by itself (``bm25`` depends on the matched row and table-wide
    statistics only); the records of the best ``n`` are then read and checked against
    ``where``. When fewer than ``k`` pass and the index had more than ``n`` matches, ``n``
    grows and the index is asked again, so the answer is always that of the full join.
    The admitted records come back as one row of two JSON arrays (seqs, ids): one step of
    the statement instead of one per record (each step is a trip out of and back into the
    interpreter lock, which a busy event loop holds), and no row object per record.
    """
    n = k + _SLACK
    while True:
        hits = conn.execute(_TOP, (expr, n)).fetchall()
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
