"""Profile facts scored by the question (pure).

``build_context`` offers the user's profile facts beside the search's hits. They used to score
a fixed 0.6 (less 0.01 per similarity rank), whatever the question: on LoCoMo, whose heuristic
profiles hold 4-26 facts ("likes: every day", "likes: is awesome"), they took ~180 of a
1,000-token context and pushed out turns that held answers. Now a fact's score falls with
its rank, ``FACT_TOP - step × rank``, down to ``FACT_FLOOR``: the facts most similar to the
question keep the top score, the tail of a large profile ranks below the relevant turns and
fills what they leave, ahead of the weakest hits and of the digests offered at fixed scores
(clusters 0.1, background summaries 0.05).
A fact that shares a term with the question (its key's words or its value's, as the lexical
search reads them) ranks before those that do not, however the dense model placed it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["FACT_FLOOR", "FACT_TOP", "rank_facts"]

# The first fact's score: fused scores of turns run ~1.0 for a first place in both search
# lists down to ~0.3 (``AsyncLayerSources.facts`` used it for every fact).
FACT_TOP = 0.6
# The lowest score of a fact: above ``ContextConfig.cluster_score`` (0.1) and the background
# summaries (0.05). Without it, a 4,000-token LoCoMo context showed ~110 of the profile's
# ~190 tokens; with it ~150, for 0.1 point of answer recall at each budget.
FACT_FLOOR = 0.2

R = TypeVar("R")


def rank_facts(
    facts: Sequence[R],
    text_of: Callable[[R], str],
    question_terms: frozenset[str],
    terms: Callable[[str], frozenset[str]],
    step: float,
) -> list[tuple[R, float]]:
    """``facts`` (most similar to the question first) with their scores, best first: those
    sharing a term with ``question_terms`` first, each group in the given order, scored
    ``FACT_TOP - step × rank``, at least ``FACT_FLOOR`` (``terms`` splits a fact's text as
    the question was split; a key's underscores count as spaces)."""
    shared: list[R] = []
    rest: list[R] = []
    for fact in facts:
        words = terms(text_of(fact).replace("_", " ")) if question_terms else frozenset()
        (shared if words & question_terms else rest).append(fact)
    ranked = shared + rest
    return [(fact, max(FACT_FLOOR, FACT_TOP - step * rank)) for rank, fact in enumerate(ranked)]
