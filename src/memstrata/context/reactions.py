"""How much of a turn only reacts to the other speaker, pure.

In a conversation between people, a large part of the turns react to what the other one
said: "Wow Nate! Congrats on winning! Tell me more - what game was it?", "So proud of you
for winning that tournament, that's awesome!", "太好了！恭喜你！". They repeat the words of
the turn they answer, so they rank high for a question about it, and rarely hold its answer:
the one who did the thing says what was done ("I was in the final of a big Valorant
tournament last Saturday, and I won!"). On LoCoMo conversations 0–4, of the 867 turns ranked
above an evidence turn that a 1,000-token context then cut, 130 were mostly such sentences
(2 of the 31 evidence turns were).

A sentence counts as a reaction when it says nothing of the one speaking (no first-person
word: I, my, we, ...; 我, 咱) and either speaks to the other (you, your; 你, 您) or is a bare
interjection of at most three words ("Wow Nate!", "That's great!", "太好了！"; a digit makes
it a statement: "At 5!"). A question is not counted here: ``question_share`` takes those
(context/question_turns.py). ``build_context`` lowers a turn's score by
``ContextConfig.reaction_penalty`` × its reaction share.

The words read here are English and Chinese. A short sentence of another language is as
likely to say something ("Ich bin Lehrerin.", "Soy de Lima.") as to react, so the
interjection rule applies only to a turn that reads as English (a common English word:
the, and, that, wow, thanks, …) or as Chinese (Han characters and no kana or hangul), or
has no letter at all (";)"); another turn counts only its sentences to the other speaker,
which no word here matches in its language.
"""

from __future__ import annotations

import re
from bisect import bisect_left

__all__ = ["reaction_share"]

# A sentence: text up to a run of end punctuation (or the end of the text), as in
# question_turns.py.
_SENTENCE = re.compile(r"[^.!?。！？]*[.!?。！？]+|[^.!?。！？]+$")
_QUESTION_MARKS = frozenset("?？")
_END_MARKS = ".!?。！？"
_SPEAKER = re.compile(r"^[^:：\n]{1,40}[:：]\s*")
# Matched against the lower-cased text (one scan of the whole turn for each, not one per
# sentence: ~2x faster than case-insensitive searches sentence by sentence).
_FIRST_PERSON = re.compile(
    r"\b(?:i|i'm|im|i've|i'd|i'll|me|my|mine|myself|we|we're|we've|our|ours|us)\b|我|咱"
)
_SECOND_PERSON = re.compile(
    r"\b(?:you|you're|youre|you've|you'd|you'll|your|yours|yourself|yourselves|ya)\b|你|您"
)
# Words of a script that spaces them, and Han characters (two make about a word).
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?|\d+")
_HAN = re.compile(r"[\u3400-\u9fff]")
_DIGIT = re.compile(r"\d")
# Kana and hangul: Japanese or Korean, whose Han characters are not Chinese.
_KANA_HANGUL = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\u1100-\u11ff\uac00-\ud7af]")
# English words that are not words of another language written in Latin letters: the
# search's English stop words without "a", "i", "my", "he", "in", "is", "so", "was",
# "me", "once", "will", "also", "ok", "hey" … (German, Dutch, Spanish, French, Italian or
# Polish words, or words every language borrows), and words English speakers react with.
# A turn with one of them (the lower-cased turn, matched as words: "it" in "it's" too)
# reads as English.
_ENGLISH = re.compile(
    r"\b(?:about|above|after|again|against|all|and|any|are|because|been|before|being|below|"
    r"between|both|but|can|could|did|does|doing|down|during|each|few|from|further|has|"
    r"have|having|here|hers|herself|him|himself|his|how|if|into|it|its|itself|"
    r"just|myself|not|now|off|only|other|our|ours|ourselves|out|own|same|she|"
    r"should|some|such|than|that|the|their|theirs|them|themselves|then|there|these|they|"
    r"this|those|through|too|until|up|very|we|were|what|when|where|which|while|who|whom|"
    r"why|with|would|you|your|yours|yourself|yourselves|really|yeah|like|got|get|thing|"
    r"wow|thanks|thank|congrats|congratulations|great|awesome|nice|amazing|cool|yes|yep|"
    r"yup|yay|love|good|glad|sorry|haha|lol|omg|aww|cute|sounds|keep|stay|safe|hope|luck|"
    r"take|soon|bye|night|morning|cheers|welcome|agreed|sure|totally|definitely|"
    r"absolutely|exactly|right|well|fun|lovely|sweet|beautiful|perfect|wonderful|"
    r"fantastic|incredible|happy|excited|proud|talk|later|ttyl)\b"
)
# "I" as English writes it (a capital, alone or with its contraction): Polish and Italian
# write their "i" (and, the) in lower case inside a sentence.
_ENGLISH_I = re.compile(r"(?<![\w'’])I(?:['’](?:m|ve|ll|d))?(?![\w'’])")
_INTERJECTION_WORDS = 3
# A sentence longer than this holds more than three words in any script (a Latin word of 12
# letters and its space, CJK at two characters a word): no interjection, no word count.
_INTERJECTION_CHARS = 40


def _words(sentence: str) -> float:
    han = len(_HAN.findall(sentence))
    spaced = len(_WORD.findall(_HAN.sub(" ", sentence))) if han else len(_WORD.findall(sentence))
    return spaced + han / 2


def _starts(pattern: re.Pattern[str], text: str) -> list[int]:
    return [m.start() for m in pattern.finditer(text)]


def _within(starts: list[int], start: int, end: int) -> bool:
    at = bisect_left(starts, start)
    return at < len(starts) and starts[at] < end


def _reads(body: str, lower: str) -> bool:
    """Whether ``body`` reads as English or Chinese (see the module's docstring)."""
    if _HAN.search(body):
        return not _KANA_HANGUL.search(body)
    return bool(_ENGLISH.search(lower) or _ENGLISH_I.search(body)) or not any(
        ch.isalpha() for ch in body
    )


def reaction_share(text: str) -> float:
    """The share of ``text``'s characters (without a leading "Name: ") in sentences that
    only react to the other speaker (see the module's docstring): 0.0 for a turn that
    states something, 1.0 for "Wow! Congrats on winning, so proud of you!"."""
    body = _SPEAKER.sub("", text, count=1).strip()
    if not body:
        return 0.0
    lower = body.lower()
    first, second = _starts(_FIRST_PERSON, lower), _starts(_SECOND_PERSON, lower)
    interjections: bool | None = None  # _reads, worked out when a short sentence needs it
    reacted = 0
    for m in _SENTENCE.finditer(body):
        start, end = m.span()
        said = m.group().strip()
        if not said or _within(first, start, end):
            continue
        ending = said[len(said.rstrip(_END_MARKS)) :]
        if _QUESTION_MARKS & set(ending):
            continue  # question_share's
        if _within(second, start, end):
            reacted += len(said)
        elif (
            len(said) <= _INTERJECTION_CHARS
            and not _DIGIT.search(said)
            and _words(said) <= _INTERJECTION_WORDS
        ):
            if interjections is None:
                interjections = _reads(body, lower)
            if interjections:
                reacted += len(said)
    return min(1.0, reacted / len(body))
