"""FTS5 query text for lexical search, built so that user input cannot change its meaning.

Terms come pre-tokenised by :func:`memstrata.search.tokenize.tokenize`; each is quoted as
an FTS5 string (double quotes doubled), so operators, column names and punctuation in a
term are matched literally. The match is confined to one user by the scope token column::

    scope_tok : "s1a2b..." AND terms : ("t1" OR "t2" ...)

and ranked with ``bm25(lexical, 0.0, 1.0)`` so the scope column adds nothing to a score.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["BM25_WEIGHTS", "match_expression", "quote_term", "terms_text"]

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
