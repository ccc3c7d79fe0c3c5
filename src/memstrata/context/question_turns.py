"""How much of a turn only asks something, pure.

A turn that asks ("Wow, what happened? Did you hear any inspiring stories?") rarely holds the
answer to a question about the past, yet it ranks high for one: a dense model puts
question-shaped text close to a question (on LoCoMo, 10.6 % of all turns are mostly
questions but 1.9 % of the turns that hold an answer). ``build_context`` lowers a turn's
score by ``ContextConfig.question_penalty`` × its question share. The answer to a question
keeps its place: it is indexed under the question's words (``search/reply_terms.py``).

A question about oneself is not "only asking": "Can you recommend a vet for my dog Max?"
tells the memory that the user has a dog called Max, and in a user's chat with an assistant
such questions are where much of what the user reveals is said. A question sentence with a
first-person word (I, my, me, we, our, ...; 我, 咱) therefore counts as a statement. (None
of the evaluation sets has such turns; on LoCoMo conversations 0–2 the exemption cost 0.1 /
0.3 points at 2k / 4k tokens and tied on the synthetic sets.)
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
# A question that says something about the one asking (see the module's docstring).
_FIRST_PERSON = re.compile(
    r"\b(?:i|i'm|im|i've|i'd|i'll|me|my|mine|myself|we|we're|we've|our|ours|us)\b|我|咱",
    re.IGNORECASE,
)


def question_share(text: str) -> float:
    """The share of ``text``'s characters (without a leading "Name: ") in sentences that end
    with a question mark and say nothing of the one asking: 0.0 for a statement (or a
    question about oneself), 1.0 for a turn that only asks."""
    if "?" not in text and "？" not in text:
        return 0.0  # most turns: one scan instead of two regexes
    body = _SPEAKER.sub("", text, count=1).strip()
    if not body:
        return 0.0
    asked = 0
    for sentence in _SENTENCE.findall(body):
        ending = sentence.rstrip()[len(sentence.rstrip().rstrip(_END_MARKS)) :]
        if _QUESTION_MARKS & set(ending) and not _FIRST_PERSON.search(sentence):
            asked += len(sentence.strip())
    return min(1.0, asked / len(body))
