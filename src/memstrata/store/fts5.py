"""SQLite FTS5's view of lexical terms and its ``bm25()``: the ranking both stores reproduce.

Until schema 10 the SQLite store indexed a record's terms (from
:func:`memstrata.search.tokenize.tokenize`) joined by spaces in one FTS5 table per tenant,
whose ``unicode61`` tokenizer split and case-folded them once more, and ranked matches with
``bm25(lexical, 0.0, 1.0)``. Both stores now keep postings of their own (``lexical.py`` of
each) and rank as that did: the same tokens, the same formula and the same statistics,
each tenant's own (as FTS5 read them from the tenant's table):

- ``tokens(term)``: the tokens ``unicode61`` makes of one term (usually the term itself;
  punctuation such as ``・`` is dropped, ``foo-bar`` becomes a two-token phrase). Asked of
  SQLite's own tokenizer, so a Unicode table never drifts between the two stores. A term
  of word characters and combining marks (Indic, Thai … terms since schema 11) is one
  token as it is: ``unicode61`` would cut it at every mark.
- ``idf = log((N - n + 0.5) / (n + 0.5))``, floored at ``1e-6`` when not positive, with
  ``N`` the number of indexed rows and ``n`` the rows holding the phrase;
- ``score(doc) = Σ_phrases idf · f·(k1+1) / (f + k1·(1 - b + b·D/avgdl))`` with
  ``k1 = 1.2``, ``b = 0.75``, ``f`` the phrase's occurrences in the record's terms, ``D``
  the row's token count (its terms plus the one scope token) and ``avgdl`` the mean ``D``.

The sum runs over the query's phrases in order (the scope phrase adds ``0.0``), in IEEE
double arithmetic like the C code, so equal inputs give bit-equal scores and ties fall to
insertion order in both stores.
"""

from __future__ import annotations

import hashlib
import math
import re
import sqlite3
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache

from ..traces import keeps_words

__all__ = [
    "B",
    "K1",
    "K1_PLUS_1",
    "MAX_TOKEN_BYTES",
    "ONE_MINUS_B",
    "bounded",
    "document_tokens",
    "idf",
    "phrase_count",
    "query_phrases",
    "term_score",
    "tokens",
]

K1 = 1.2
B = 0.75
K1_PLUS_1 = K1 + 1.0  # computed as the C code does, not written as 2.2
ONE_MINUS_B = 1 - B

_PLAIN = re.compile(r"[a-z0-9]+")
# Kana voicing marks are left to unicode61: terms made before schema 11 may hold them.
_KANA_VOICING = frozenset("\u3099\u309a")
_lock = threading.Lock()
_conn: sqlite3.Connection | None = None


def _tokenizer() -> sqlite3.Connection:
    global _conn
    if _conn is None:
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        conn.execute(
            "CREATE VIRTUAL TABLE t USING fts5 (terms, tokenize = 'unicode61 remove_diacritics 0')"
        )
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab (t, 'instance')")
        _conn = conn
    return _conn


# Terms longer than this are tokenised at each call, not kept: the cache's 200,000 entries
# are bounded in number, and a term may be as long as a record (100,000 characters), so a
# server fed long distinct terms kept up to 15 KB per 5,000 characters for each (session 29).
_CACHED_TERM_CHARS = 64


def tokens(term: str) -> tuple[str, ...]:
    """The tokens FTS5's ``unicode61`` tokenizer makes of ``term``, in order; a token of
    more than :data:`MAX_TOKEN_BYTES` bytes as :func:`bounded` makes it."""
    if len(term) > _CACHED_TERM_CHARS:
        return tuple(bounded(t) for t in _tokens(term))
    return _cached_tokens(term)  # at most 64 characters: 256 bytes


# PostgreSQL keeps each token in btree keys (lex_postings, lex_df: a tenant id of up to
# 1,024 bytes beside it) whose rows hold at most 2,704 bytes: a word of 3,000 letters (a hex
# dump, a long number) made every write holding it fail ("index row size ... exceeds
# btree version 4 maximum 2704"; session 31). Such a token stands for itself by its start
# and a hash: the same word gives the same token in a record and in a query.
MAX_TOKEN_BYTES = 1_000


def bounded(token: str) -> str:
    """``token``, or when its UTF-8 takes more than :data:`MAX_TOKEN_BYTES` bytes its first
    200 characters, ``#`` (which no ``unicode61`` token holds) and a hash of the whole."""
    if len(token) * 4 <= MAX_TOKEN_BYTES or len(token.encode()) <= MAX_TOKEN_BYTES:
        return token
    digest = hashlib.blake2b(token.encode(), digest_size=16).hexdigest()
    return f"{token[:200]}#{digest}"


def _tokens(term: str) -> tuple[str, ...]:
    if _PLAIN.fullmatch(term):
        return (term,)
    if _marked(term):
        return (term,)
    with _lock:
        conn = _tokenizer()
        conn.execute("DELETE FROM t")
        conn.execute("INSERT INTO t (rowid, terms) VALUES (1, ?)", (term,))
        rows = conn.execute("SELECT term FROM v WHERE doc = 1 ORDER BY offset").fetchall()
    return tuple(str(r[0]) for r in rows)


_cached_tokens = lru_cache(maxsize=200_000)(_tokens)
keeps_words(_cached_tokens.cache_clear)  # the terms are users' words (memstrata.traces)


def _marked(term: str) -> bool:
    """A term of word characters (``_`` aside) and marks, holding a mark."""
    mark = False
    for ch in term:
        cat = unicodedata.category(ch)
        if cat[0] == "M" and ch not in _KANA_VOICING:
            mark = True
        elif ch == "_" or not (cat[0] in "LN" or cat[0] == "M"):
            return False
    return mark


def usable(terms: Iterable[str]) -> list[str]:
    """The terms the SQLite store indexes (``lexical.terms_text`` drops blank ones)."""
    return [t for t in terms if t and not t.isspace()]


def document_tokens(terms: Sequence[str]) -> list[str]:
    """Every token of a record's terms in order: what FTS5 stores for the terms column."""
    out: list[str] = []
    for term in usable(terms):
        out.extend(tokens(term))
    return out


def query_phrases(terms: Sequence[str]) -> list[tuple[str, ...]]:
    """One phrase per distinct usable query term, in first-seen order (empty ones kept: they
    match nothing and add nothing, as in FTS5)."""
    return [tokens(t) for t in dict.fromkeys(usable(terms))]


def phrase_count(doc: Sequence[str], phrase: Sequence[str]) -> int:
    """Occurrences of ``phrase`` as consecutive tokens of ``doc`` (overlaps count)."""
    n = len(phrase)
    if n == 0:
        return 0
    first = phrase[0]
    return sum(
        1
        for i in range(len(doc) - n + 1)
        if doc[i] == first and tuple(doc[i : i + n]) == tuple(phrase)
    )


def idf(rows: int, hits: int) -> float:
    value = math.log((rows - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else 1e-6


def term_score(idf_value: float, freq: float, length: float, avgdl: float) -> float:
    """One phrase's part of a row's score, operation for operation as in ``fts5_aux.c``."""
    return idf_value * ((freq * K1_PLUS_1) / (freq + K1 * (ONE_MINUS_B + B * length / avgdl)))
