"""The terms a reply is indexed under: the questions of the turn before it (pure).

:mod:`memstrata.search.reply_terms` (async source ``_async/search/reply_terms.py``) applies
them to writes and purges; these two functions are the whole rule, shared by both trees.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from memstrata.search.tokenize import tokenize

__all__ = ["question_terms", "reply_terms"]

_QUESTION = re.compile(r"[^.!?。！？\n]*[?？]")


def question_terms(
    text: str | None, terms: Callable[[str], list[str]] = tokenize
) -> tuple[str, ...]:
    """The lexical terms (``terms``: :func:`tokenize`, or the schema 11 migrations' old
    tokenizer) of the sentences of ``text`` that ask something (may be empty)."""
    if not text or ("?" not in text and "？" not in text):
        return ()
    return tuple(t for sentence in _QUESTION.findall(text) for t in terms(sentence))


def reply_terms(texts: Sequence[str], before: str | None) -> list[tuple[str, ...]]:
    """For consecutive turns ``texts`` of one session, the extra terms each is indexed
    under: the questions of the turn before it (``before`` for the first one)."""
    out: list[tuple[str, ...]] = []
    previous = before
    for text in texts:
        out.append(question_terms(previous))
        previous = text
    return out
