"""New lexical terms for a record indexed by an older tokenizer (pure; both stores' migrations).

Until schema 10 :func:`~memstrata.search.tokenize.tokenize` sent Hangul and kana to jieba
(one term per syllable) and cut Indic, Thai … words at every mark; until SQLite's schema 14
(PostgreSQL's 16) it kept the accents of Latin and Greek letters. A record indexed then
holds those terms; the query of the same word now makes others, so the two would not meet.
Only records whose indexed tokens (or, for accents, text) hold a character of those
scripts can change (:func:`memstrata.search.scripts.may_change`,
:func:`~memstrata.search.scripts.may_fold`); English and Chinese records never do.
Each migration names the tokenizer that indexed the records (``old``) and the one it
re-terms them with (``new``): schema 11 goes from
:func:`~memstrata.search.tokenize.tokenize_v10` to
:func:`~memstrata.search.tokenize.tokenize_v14`, the accent step from there to
:func:`~memstrata.search.tokenize.tokenize`.

What a record is indexed under is its own text's terms, and for a reply the terms of the
questions of the turn before it (:mod:`memstrata.search.search_questions`).
:func:`reterm` recognises both parts in the stored tokens, by the old tokenizer, and makes
them again with the new one: the record's text, and the question text found among the
turns before it (question terms whose text is not found there, say the turn was edited
since, are kept as they are, their accents folded by the accent step). A record whose
tokens do not start with its own text's old terms (indexed by an older tokenizer still,
or under terms that were not its own) is left as it is.

The other re-term (SQLite's schema 20, PostgreSQL's step 27) keeps the tokenizer and
changes which turn a reply is indexed under: :func:`turn_terms` gives a turn its terms by
today's rule, from the turn listed before it (:class:`Turn`), as
:func:`memstrata.search.reply_terms.kept_terms` does. Stores written before session 29 hold
replies indexed under a turn of their call that is not listed right before them (session
28's and 29's changes of that rule), and since session 30 a purge of that turn reads only
its neighbours: such a reply kept the purged question's words.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass

from memstrata.search.scripts import may_fold
from memstrata.search.search_questions import question_terms
from memstrata.search.tokenize import tokenize
from memstrata.store import fts5

__all__ = [
    "Batch",
    "Befores",
    "Row",
    "PART",
    "Rows",
    "Turn",
    "Write",
    "answers",
    "next_step",
    "reterm",
    "reterm_steps",
    "turn_terms",
]

Tokenizer = Callable[[str], list[str]]


def _rest(text: str, indexed: Sequence[str], old: Tokenizer) -> list[str] | None:
    """The stored tokens after those of the record's own text (``None``: they do not
    start with those)."""
    own = fts5.document_tokens(old(text))
    if list(indexed[: len(own)]) != own:
        return None
    return list(indexed[len(own) :])


def answers(text: str, indexed: Sequence[str], *, old: Tokenizer) -> bool:
    """Whether the record is indexed under terms beyond its own (a reply under the
    question before it): only then does :func:`reterm` read the turns before it."""
    return bool(_rest(text, indexed, old))


def reterm(
    text: str,
    indexed: Sequence[str],
    before: Iterable[str | None],
    *,
    old: Tokenizer,
    new: Tokenizer,
    fold_strays: bool = False,
) -> tuple[str, ...] | None:
    """The record's new terms, or ``None`` to leave it as it is.

    ``indexed`` is the record's stored document tokens (FTS5's tokens of its terms);
    ``before`` the texts that may be the turn it answers, likeliest first (needed only
    when :func:`answers`); ``old`` the tokenizer that made them, ``new`` the one to
    make them again with. With ``fold_strays`` the question tokens whose turn is not
    found are replaced by the terms :func:`tokenize` makes of each one that holds an
    accent ("zoë" → "zoe"), as near as the turn's own terms can be guessed.
    """
    rest = _rest(text, indexed, old)
    if rest is None:
        return None
    terms = tuple(new(text))
    if not rest:
        return terms
    for prev in before:
        if fts5.document_tokens(question_terms(prev, old)) == rest:
            return terms + question_terms(prev, new)
    if fold_strays:
        return terms + tuple(n for t in rest for n in (tokenize(t) if may_fold(t) else [t]))
    return terms + tuple(rest)


# --- the migrations' loop (SQLite's v11 and v15, PostgreSQL's v11 and v17) ------------------
# One loop for both stores, without I/O: :func:`reterm_steps` yields what it needs read or
# written and is sent the answer; each store's migration runs it with its own queries
# (sqlite3 or psycopg; until session 29 each store held its own copy of the loop).


@dataclass(frozen=True, slots=True)
class Row:
    """A record as a migration reads it: ``raw`` is the store's own row (for
    :class:`Befores`), ``tokens`` its stored document tokens."""

    seq: int
    tenant: str
    user: str
    message: bool
    text: str
    tokens: list[str]
    raw: tuple[object, ...]


@dataclass(frozen=True, slots=True)
class Batch:
    """Read the next batch after ``seq`` ``last`` (``seq`` first); answer: the rows, empty
    at the end."""

    last: int


@dataclass(frozen=True, slots=True)
class Rows:
    """Read these records; answer: their :class:`Row`, in ``seq`` order."""

    seqs: list[int]


@dataclass(frozen=True, slots=True)
class Befores:
    """For each of these replies, the texts of the turns that may be the one it answers,
    likeliest first; answer: ``{seq: texts}``."""

    rows: list[Row]


@dataclass(frozen=True, slots=True)
class Write:
    """Index these records under their new terms where they differ from the stored ones
    (the store compares as it stores); answer: ``None``."""

    made: list[tuple[Row, tuple[str, ...]]]


Step = Batch | Rows | Befores | Write


def reterm_steps(
    pick: Callable[[tuple[object, ...]], bool],
    *,
    old: Tokenizer,
    new: Tokenizer,
    fold_strays: bool = False,
) -> Generator[Step, object, None]:
    """Re-term the records ``pick`` chooses among the rows of the batches (``seq`` first,
    read after the last one): :func:`reterm` from the ``old`` tokenizer's terms to the
    ``new`` one's, replies' question terms included (the turns before them read only for
    those indexed under more than their own terms, :func:`answers`)."""
    last = 0
    while True:
        batch = yield Batch(last)
        assert isinstance(batch, list)
        if not batch:
            return
        last = int(batch[-1][0])
        seqs = [int(row[0]) for row in batch if pick(tuple(row))]
        if not seqs:
            continue
        rows = yield Rows(seqs)
        assert isinstance(rows, list)
        replies = [r for r in rows if r.message and answers(r.text, r.tokens, old=old)]
        befores: object = (yield Befores(replies)) if replies else {}
        assert isinstance(befores, dict)
        made: list[tuple[Row, tuple[str, ...]]] = []
        for r in rows:
            terms = reterm(
                r.text, r.tokens, befores.get(r.seq, ()), old=old, new=new, fold_strays=fold_strays
            )
            if terms is not None:
                made.append((r, terms))
        if made:
            yield Write(made)


def next_step(steps: Generator[Step, object, None], answer: object) -> Step | None:
    """The step ``steps`` asks for once sent ``answer`` (``None`` first), ``None`` at its end."""
    try:
        return steps.send(answer)
    except StopIteration:
        return None


# --- replies by today's rule (SQLite's schema 20, PostgreSQL's step 27) -------------------

PART = 5000
"""Turns a re-term by :func:`turn_terms` reads at a time (bounded memory)."""


@dataclass(frozen=True, slots=True)
class Turn:
    """A stored turn as :func:`turn_terms` needs it: its session, its ``created_at`` (the
    ``add_messages`` call that wrote it), its text, and whether it is active (a deleted
    turn gives the one after it no words)."""

    session: str | None
    created_at: object
    text: str
    active: bool


def turn_terms(turn: Turn, before: Turn | None) -> tuple[str, ...]:
    """The terms ``turn`` is indexed under today: its own and the questions of ``before``,
    the turn listed just before it (in its session by time, then writing order, deleted
    included; without a session among all the user's turns). A session-less turn counts
    ``before`` only when it has no session either and was written in the same call (the
    same ``created_at``): :func:`memstrata.search.reply_terms._linked`, the definition
    :func:`~memstrata.search.reply_terms.kept_terms` reads."""
    linked = before is not None and (
        turn.session is not None
        or (before.session is None and before.created_at == turn.created_at)
    )
    asks = before.text if linked and before is not None and before.active else None
    return tuple(tokenize(turn.text)) + question_terms(asks)
