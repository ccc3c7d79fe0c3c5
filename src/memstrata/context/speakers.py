"""Whom a question is about, among the people who spoke, pure.

In a conversation between people ("Caroline: …", "Melanie: …"; each turn stored with its
speaker, ``metadata["speaker"]``), a question about one of them ("What recipes has Nate
made?", "周涛养了什么宠物？") is answered by what that person said: on LoCoMo, 96 % of the
evidence turns of the questions that name one of the two speakers were said by that speaker
(1,965 of 2,048), while half of all turns are. Yet the other speaker's turns rank high for
it: they call the one they talk to by name ("Thanks Nate! See you later!"), so the name
matches, and a short turn that matches a name scores high in BM25. ``build_context`` lowers
the score of a turn said by someone the question does not name, when it names someone who
spoke (``ContextConfig.speaker_penalty``). A question naming no speaker, or every speaker
among the candidates, changes nothing; turns without a speaker are never affected.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from memstrata.traces import keeps_words

__all__ = ["named_speakers"]

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


@lru_cache(maxsize=1024)
def _pattern(name: str) -> re.Pattern[str] | None:
    """How ``name`` is found in a question: as a word (its first word too: "Caroline" for
    "Caroline Smith"), case as written; a Chinese name anywhere (no spaces between words).
    ``None`` for a name too short to tell (one letter)."""
    name = name.strip()
    if not name:
        return None
    if _CJK.search(name):
        return re.compile(re.escape(name)) if len(name) >= 2 else None
    words = name.split()
    forms = {name, words[0]}
    forms = {f for f in forms if len(f) >= 2}
    if not forms:
        return None
    alternatives = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
    return re.compile(rf"(?<![\w'’])(?:{alternatives})(?![\w])")


# Names are users' words, kept here and in ``re``'s own cache (memstrata.traces).
keeps_words(_pattern.cache_clear)
keeps_words(re.purge)


def named_speakers(question: str, speakers: Iterable[str]) -> frozenset[str]:
    """The ``speakers`` whom ``question`` names (possessives count: "Nate's turtles")."""
    named = set()
    for speaker in speakers:
        pattern = _pattern(speaker)
        if pattern is not None and pattern.search(question):
            named.add(speaker)
    return frozenset(named)
