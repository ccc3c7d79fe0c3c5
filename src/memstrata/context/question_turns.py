"""How much of a turn only asks something, pure.

A turn that asks ("Wow, what happened? Did you hear any inspiring stories?") rarely holds the
answer to a question about the past, yet it ranks high for one: a dense model puts
question-shaped text close to a question (on LoCoMo, 10.6 % of all turns are mostly
questions but 1.9 % of the turns that hold an answer). ``build_context`` lowers a turn's
score by ``ContextConfig.question_penalty`` × its question share. The answer to a question
keeps its place: it is indexed under the question's words (``search/reply_terms.py``).
"""

from __future__ import annotations

import re

__all__ = ["question_share"]

# A sentence: text up to a run of end punctuation (or the end of the text).
_SENTENCE = re.compile(r"[^.!?。！？]*[.!?。！？]+|[^.!?。！？]+$")
_QUESTION_MARKS = frozenset("?？")
_END_MARKS = ".!?。！？"
# "Caroline: ..." — a speaker's name written before the turn is not part of what was said.
_SPEAKER = re.compile(r"^[^:：\n]{1,40}[:：]\s*")


def question_share(text: str) -> float:
    """The share of ``text``'s characters (without a leading "Name: ") in sentences that end
    with a question mark: 0.0 for a statement, 1.0 for a turn that only asks."""
    if "?" not in text and "？" not in text:
        return 0.0  # most turns: one scan instead of two regexes
    body = _SPEAKER.sub("", text, count=1).strip()
    if not body:
        return 0.0
    asked = 0
    for sentence in _SENTENCE.findall(body):
        ending = sentence.rstrip()[len(sentence.rstrip().rstrip(_END_MARKS)) :]
        if _QUESTION_MARKS & set(ending):
            asked += len(sentence.strip())
    return min(1.0, asked / len(body))
