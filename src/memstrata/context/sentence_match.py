"""How much of a question one sentence of a turn says (pure).

A long turn that answers a question in one of its sentences ("Hey Joanna! Hope you're doing
alright. Crazy thing happened - I was in the final of a big Valorant tournament last
Saturday, and I won! ...") ranks low in both search legs: BM25 normalises its matches by the
turn's length and its vector is the mean of everything it says. On LoCoMo, of the questions
whose evidence a 4,000-token context shows and a 1,000-token one cuts, the evidence ranked
20th–110th among the items offered, and such session openers were common among them
(docs/measurements.md, "Session 32"). ``ContextConfig.sentence_boost`` adds to a turn's score
the share of the question's lexical terms (the search's own: stemmed English, segmented
Chinese) that its best sentence holds, so a turn with one sentence that says much of the
question is not diluted by the rest.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

__all__ = ["best_sentence_share"]

_SENTENCE = re.compile(r"[^.!?。！？\n]*[.!?。！？\n]+|[^.!?。！？\n]+$")


def best_sentence_share(
    text: str,
    question_terms: Collection[str],
    terms_of: Callable[[str], Collection[str]],
) -> float:
    """The largest share of ``question_terms`` that one sentence of ``text`` holds (0 when
    the question has no term); ``terms_of`` splits a sentence as the question was split."""
    if not question_terms:
        return 0.0
    asked = set(question_terms)
    best = 0
    for sentence in _SENTENCE.findall(text):
        if sentence.strip():
            best = max(best, len(asked.intersection(terms_of(sentence))))
            if best == len(asked):
                break
    return best / len(asked)
