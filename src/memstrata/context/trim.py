"""A long turn shown as the sentences that share the question's words, pure.

An assistant's reply runs to 100–300 tokens of advice of which one sentence, at most, is
what a question about it needs; shown whole, four such replies fill a 1,000-token context.
``build_context`` shows an assistant's turn longer than ``ContextConfig.trim_turns_over``
tokens as its sentences that share a lexical term with the question (the search's own terms:
stemmed English, segmented Chinese), in their order, with "…" where sentences were left out.
A turn with no such sentence is shown whole (nothing says which part matters). It is not
applied when the question speaks to the assistant ("Which name did you suggest?"): the
sentence that answers it need not share a word with it, and cutting lost it on the synthetic
set. The user's turns are never cut: on LoCoMo, where turns are 20–40 tokens, trimming
turns lost answers (docs/measurements.md, "Issue 13, eighth session").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

__all__ = ["trim_turn"]

_SENTENCE = re.compile(r"[^.!?。！？\n]*[.!?。！？\n]+|[^.!?。！？\n]+$")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
ELLIPSIS = "…"


def trim_turn(
    text: str,
    terms: Collection[str],
    terms_of: Callable[[str], Collection[str]],
) -> str:
    """``text`` cut to its sentences sharing one of ``terms`` (the question's lexical terms;
    ``terms_of`` gives a sentence's), "…" marking each gap; ``text`` itself when no sentence
    shares one (or all do)."""
    if not terms:
        return text
    wanted = set(terms)
    sentences = [s for s in _SENTENCE.findall(text) if s.strip()]
    keep = [not wanted.isdisjoint(terms_of(s)) for s in sentences]
    if not any(keep) or all(keep):
        return text
    sep = "" if _CJK.search(text) else " "
    parts: list[str] = []
    gap = False
    for sentence, kept in zip(sentences, keep, strict=True):
        if kept:
            if gap:
                parts.append(ELLIPSIS)
            parts.append(sentence.strip())
            gap = False
        else:
            gap = True
    if gap:
        parts.append(ELLIPSIS)
    return sep.join(parts)
