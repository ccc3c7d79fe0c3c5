"""New lexical terms for a record indexed before schema 11 (pure; both stores' migrations).

Until schema 10 :func:`~memstrata.search.tokenize.tokenize` sent Hangul and kana to jieba
(one term per syllable) and cut Indic, Thai … words at every mark. A record indexed then
holds those terms; the query of the same word now makes others, so the two would not meet.
Only records whose indexed tokens hold a character of those scripts can change
(:func:`memstrata.search.scripts.may_change`); English and Chinese records never do.

What a record is indexed under is its own text's terms, and for a reply the terms of the
questions of the turn before it (:mod:`memstrata.search.search_questions`).
:func:`reterm` recognises both parts in the stored tokens, by the old tokenizer, and makes
them again with the new one: the record's text, and the question text found among the
turns before it (question terms whose text is not found there, say the turn was edited
since, are kept as they are). A record whose tokens do not start with its own text's old
terms (indexed by an older tokenizer still, or under terms that were not its own) is left
as it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memstrata.search.search_questions import question_terms
from memstrata.search.tokenize import tokenize, tokenize_v10
from memstrata.store import fts5

__all__ = ["answers", "reterm"]


def _rest(text: str, indexed: Sequence[str]) -> list[str] | None:
    """The stored tokens after those of the record's own text (``None``: they do not
    start with those)."""
    own = fts5.document_tokens(tokenize_v10(text))
    if list(indexed[: len(own)]) != own:
        return None
    return list(indexed[len(own) :])


def answers(text: str, indexed: Sequence[str]) -> bool:
    """Whether the record is indexed under terms beyond its own (a reply under the
    question before it): only then does :func:`reterm` read the turns before it."""
    return bool(_rest(text, indexed))


def reterm(
    text: str, indexed: Sequence[str], before: Iterable[str | None]
) -> tuple[str, ...] | None:
    """The record's new terms, or ``None`` to leave it as it is.

    ``indexed`` is the record's stored document tokens (FTS5's tokens of its terms);
    ``before`` the texts that may be the turn it answers, likeliest first (needed only
    when :func:`answers`).
    """
    rest = _rest(text, indexed)
    if rest is None:
        return None
    terms = tuple(tokenize(text))
    if not rest:
        return terms
    for prev in before:
        if fts5.document_tokens(question_terms(prev, tokenize_v10)) == rest:
            return terms + question_terms(prev)
    return terms + tuple(rest)
