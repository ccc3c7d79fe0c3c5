"""Index a reply under the question it answers (pure).

In conversation the answer often lives in a short reply whose words do not name what was
asked: "What's your dog called?" — "Max, after my grandfather." A later question "what is
the name of Ana's dog?" shares no word with the reply, so BM25 cannot find it. The reply is
therefore indexed with its own terms *and* the terms of the question sentences of the turn
before it in the same session (only sentences that ask: "?" or "？"); its text, vector and
everything shown stay its own. A turn with no question before it is indexed as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from ..filters import Filters
from ..records import RecordType
from ..scope import Scope
from ..store.base import RecordWrite, Store
from .tokenize import tokenize

__all__ = ["index_replies", "question_terms", "reply_terms"]

_LAST_TURN = Filters(types=frozenset({RecordType.MESSAGE}))

_QUESTION = re.compile(r"[^.!?。！？\n]*[?？]")


def question_terms(text: str | None) -> tuple[str, ...]:
    """The lexical terms of the sentences of ``text`` that ask something (may be empty)."""
    if not text or ("?" not in text and "？" not in text):
        return ()
    return tuple(t for sentence in _QUESTION.findall(text) for t in tokenize(sentence))


def reply_terms(texts: Sequence[str], before: str | None) -> list[tuple[str, ...]]:
    """For consecutive turns ``texts`` of one session, the extra terms each is indexed
    under: the questions of the turn before it (``before`` for the first one)."""
    out: list[tuple[str, ...]] = []
    previous = before
    for text in texts:
        out.append(question_terms(previous))
        previous = text
    return out


def index_replies(store: Store, scope: Scope, writes: Sequence[RecordWrite]) -> list[RecordWrite]:
    """``writes`` (turns of one ``add_messages`` call, in order) with each message's terms
    extended by :func:`reply_terms`; the turn before the first one is the session's newest
    stored turn (one indexed read; none without a session)."""
    before: str | None = None
    if scope.session is not None:
        last = store.list(scope, _LAST_TURN, limit=1, newest_first=True)
        before = last[0].text if last else None
    extra = reply_terms([w.record.text for w in writes], before)
    return [
        replace(w, terms=w.terms + more) if more and w.record.type is RecordType.MESSAGE else w
        for w, more in zip(writes, extra, strict=True)
    ]
