"""What kind of thing a question asks for, and whether a turn holds one, pure.

"When did Melanie go on a hike after the road trip?" is answered by a turn that says when
("we just did it yesterday!"), "Which two fantasy novels does Tim enjoy?" by one that names
them ("Harry Potter and Game of Thrones are amazing"), "How many people came?" by one with a
number. Among the turns a search offers for such a question, those that hold the kind of
thing asked are far likelier to be the answer: on LoCoMo conversations 0–4, 71 % of the
evidence turns of a "when" question hold a date or a relative date against 9 % of the other
turns offered, 33 % against 11 % hold a name for "which / what / who / where", 13 % against
3 % a number for "how many / how much". ``build_context`` adds
``ContextConfig.answer_type_boost`` to such a turn's score.

Kinds and cues, English and Chinese:

- ``"time"`` — asked by "when", "what date / day / year / month / time", "how long ago",
  什么时候, 哪天, 何时, 哪一天, 几号, 哪年, 哪一年, 哪个月, 几月; held by a month's name, a
  year (1900–2099), a Chinese date (5月, 8号, 2023年) or a relative date that
  ``context/relative.py`` resolves ("yesterday", "last Saturday", "two weeks ago", 上个月).
- ``"number"`` — "how many / much / old / long", 多少, 几 (not 几号 / 几月: a time); held by
  a digit.
- ``"name"`` — "which", "what", "who", "whose", "where", 哪, 什么, 谁; held by a word with a
  capital letter inside a sentence (not its first word, not "I", not one of the
  conversation's speakers, who are named everywhere), a sentence that is only one to
  three capitalised words ending with a full stop ("Mochi. My niece picked it.", the
  answer to "What did Noor call the rabbit?"; not "Thanks." nor "Sure.": a sentence's
  first word is capitalised anyway, and a bare one is a name unless it is one of the
  words people answer with alone), a quoted title ("The Name of the Wind") or a Chinese
  title or quote (《北极光咖啡馆》, “…”). Chinese has no capitals, so a Chinese turn holds
  a name only by its quotes.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Literal

from .dates import MONTH_NAMES
from .relative import mentions_relative_date

__all__ = ["AnswerType", "asked_type", "holds_type", "names_in"]

AnswerType = Literal["time", "number", "name"]

_TIME_Q = re.compile(
    r"\bwhen\b|\bwhat\s+(?:date|day|year|month|time)\b|\bhow\s+long\s+ago\b"
    r"|什么时候|哪天|何时|哪一天|几号|哪年|哪一年|哪个月|几月",
    re.IGNORECASE,
)
_NUMBER_Q = re.compile(r"\bhow\s+(?:many|much|old|long)\b|多少|几", re.IGNORECASE)
_NAME_Q = re.compile(r"\b(?:which|what|who|whose|where)\b|哪|什么|谁", re.IGNORECASE)

_MONTHS = "|".join(MONTH_NAMES)
# Case-sensitive: a month is written with its capital ("may" is a verb).
_DATE = re.compile(r"\b(?:" + _MONTHS + r")\b|\b(?:19|20)\d\d\b|\d{1,4}\s*[年月日号]")
_DIGIT = re.compile(r"\d")
# A capitalised word after a lower-case letter, a comma or another mark inside a sentence
# and a space (so not a sentence's first word), a quoted title, a Chinese title or quote.
_NAME = re.compile(
    r"(?<=[a-z0-9,;:\-–—(&] )[A-Z][\w'’.-]*|\"[^\"\n]{2,60}\"|《[^》\n]{1,40}》|“[^”\n]{1,40}”"
)
# A sentence of one to three capitalised words and a full stop ("Mochi. My niece picked
# it.", "Sir Hops."), matched at the text's start and after each sentence's end (two
# anchored matches beside one scan for ". ": about half the time of one unanchored
# pattern that looks behind at every character).
_BARE_NAME = re.compile(r"[A-Z][\w'’-]*(?: [A-Z][\w'’-]*){0,2}(?=\.(?: |$))")
_SENTENCE_END = re.compile(r"[.!?] ")
# English words a sentence is made of alone ("Sure.", "Thanks.", "Good night."): not names.
_ALONE = frozenset(
    """yes yeah yep yup no nope sure ok okay right exactly definitely absolutely totally
    indeed true agreed same maybe perhaps probably thanks thank cheers bye goodbye hi hello
    hey well oh ah hmm haha lol wow congrats congratulations great awesome nice cool
    sorry please done good fine perfect amazing noted anyway anyways also again never
    always sometimes often once twice today tonight tomorrow yesterday morning evening
    night afternoon later soon now then here there everything nothing something anything
    everyone nobody someone none all both neither either not me you him her us them it
    this that these those mine yours ours theirs his hers what why how when where who which
    and but or so because""".split()
)
_SPEAKER = re.compile(r"^[^:：\n]{1,40}[:：]\s*")
_NOT_NAMES = frozenset({"I", "I'm", "I've", "I'll", "I'd", "I’m", "I’ve", "I’ll", "I’d"})


def asked_type(question: str) -> AnswerType | None:
    """The kind of thing ``question`` asks for, or None (a yes/no question, a request)."""
    if _TIME_Q.search(question):
        return "time"
    if _NUMBER_Q.search(question):
        return "number"
    if _NAME_Q.search(question):
        return "name"
    return None


def names_in(text: str) -> frozenset[str]:
    """The names ``text`` holds (see the module's docstring), speakers not yet set aside."""
    body = _SPEAKER.sub("", text, count=1)
    found = {m.group().strip('"“”《》.') for m in _NAME.finditer(body)}
    if ". " in body or body.endswith("."):
        starts = [0, *(m.end() for m in _SENTENCE_END.finditer(body))]
        for start in starts:
            bare = _BARE_NAME.match(body, start)
            if bare is not None and bare.group().split()[0].lower() not in _ALONE:
                found.add(bare.group())
    return frozenset(found) - _NOT_NAMES


def holds_type(
    kind: AnswerType, text: str, speakers: Collection[str] = (), names: frozenset[str] | None = None
) -> bool:
    """Whether ``text`` holds a thing of ``kind``; ``speakers`` are not names here, and
    ``names`` is :func:`names_in` of ``text`` when the caller keeps it."""
    if kind == "time":
        return bool(_DATE.search(text)) or mentions_relative_date(text)
    if kind == "number":
        return bool(_DIGIT.search(text))
    found = names_in(text) if names is None else names
    return any(name not in speakers for name in found)
