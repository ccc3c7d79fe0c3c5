"""BM25 for a caller: FTS5's ranking (:mod:`.fts5`) with statistics over what the caller reads.

The owner's lexical search weighs a term by the tenant's index (``N`` rows, ``n`` rows
holding the term, their mean length). Through a caller (``Scope.caller``: another user
reading what the owner shared) those numbers counted the owner's unshared records, so the
order of two shared hits told whether unshared records held a word (caller27 hid the raw
score; the order stayed). A caller's search is scored here instead, over the records the
caller may read (``docs``): ``N`` is their number, ``n`` those holding the phrase, ``avgdl``
their mean length; the formula and its operation order are :mod:`.fts5`'s, so a caller who
may read all of a one-user tenant's records gets the owner's scores bit for bit.

``docs`` are ``(key, length, tokens)`` in insertion order: ``length`` is the row's length
as the stores keep it (its tokens plus the scope token), ``tokens`` its document tokens
(:func:`fts5.document_tokens`). The SQL stores read what is shared by name (and by role)
whole and keep the owner's public records as an index of their own (caller29: "the public
part" in each store's ``lexical.py``), whose statistics and postings they score in SQL with
the same operations; :func:`rank` serves what they read whole, with ``stats`` when the
docs are not all of them (a query holding a phrase of several tokens).

A message is indexed under the words of the question before it as well
(:mod:`memstrata.search.reply_terms`), and that question may not be shared: through a
caller a message counts by its own words only (:func:`own_doc`), so neither the rows
holding a word, nor its score, nor the mean length (since caller29: before, its indexed
length counted there) hold a word of an unshared question.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

from ..search.tokenize import tokenize
from . import fts5

__all__ = ["own_doc", "rank"]

K = TypeVar("K", bound=Hashable)


def own_doc(key: K, text: str) -> tuple[K, int, list[str]]:
    """A message's doc made of its own text's terms (not the question's it is indexed
    under): its tokens and its length (plus the scope token)."""
    tokens = fts5.document_tokens(tokenize(text))
    return key, len(tokens) + 1, tokens


def rank(
    docs: Sequence[tuple[K, int, Sequence[str]]],
    terms: Sequence[str],
    stats: tuple[int, int] | None = None,
) -> list[tuple[K, float]]:
    """Every doc matching a phrase of ``terms``, as ``(key, score)``, best first and ties
    in ``docs`` order. ``stats``: ``(rows, total length)`` of every readable record when
    ``docs`` hold only those holding a token of the query (every doc a phrase matches is
    among them, so the phrases' row counts are whole); ``None``: ``docs`` are all of them."""
    phrases = fts5.query_phrases(terms)
    if not docs or not any(phrases):
        return []
    rows, total = stats if stats is not None else (len(docs), sum(n for _, n, _ in docs))
    if rows <= 0:
        return []
    avgdl = total / rows
    freqs: list[list[int]] = []
    hits = [0] * len(phrases)
    for _, _, tokens in docs:
        row = [
            0 if not p else tokens.count(p[0]) if len(p) == 1 else fts5.phrase_count(tokens, p)
            for p in phrases
        ]
        for i, f in enumerate(row):
            hits[i] += f > 0
        freqs.append(row)
    idfs = [fts5.idf(rows, n) if p else 0.0 for p, n in zip(phrases, hits, strict=True)]
    out: list[tuple[float, int]] = []
    for at, ((_, length, _), row) in enumerate(zip(docs, freqs, strict=True)):
        if not any(row):
            continue
        score = 0.0
        for w, f in zip(idfs, row, strict=True):
            score += fts5.term_score(w, float(f), float(length), avgdl)
        out.append((-score, at))
    out.sort()
    return [(docs[at][0], -neg) for neg, at in out]
