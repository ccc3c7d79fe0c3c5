"""A name or word typed without its accents finds the text that has them, and the reverse
(fold24), by lexical search through the public ``Memory`` API on SQLite, PostgreSQL and
``memory://``, with the offline hashing embedder.

Until fold24 the lexical terms kept diacritics: "zoe" and "zoë" were different terms, so
a user typing "Zoe", "Jose", "Muller", "Sao Tome", "Lodz" … found nothing lexically, and
the hashing embedder ranked an unrelated message first.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata import Memory, Scope

# (stored word, typed word): the text holds the first, the query is the second, and the
# other way round.
PAIRS = [
    ("Zoë", "zoe"),
    ("José", "Jose"),
    ("Müller", "Muller"),
    ("São Tomé", "Sao Tome"),
    ("Łódź", "Lodz"),
    ("Søren", "Soren"),
    ("naïve", "naive"),
    ("résumé", "resume"),
    ("Straße", "strasse"),
    ("İstanbul", "Istanbul"),  # a capital dotted I lower-cases to i + a combining dot
    ("Tiếng Việt", "tieng viet"),
    ("Αθήνα", "ΑΘΗΝΑ"),  # Greek capitals are written without tonos
    ("Dvořák", "Dvorak"),
    ("Þórunn", "Thorunn"),
]
DISTRACTORS = [
    "the meeting with the landlord went badly",
    "we talked about the weather and the trains",
    "my sister called about the meeting on Monday",
]


@pytest.fixture(params=["sqlite", "memory", "postgresql"])
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    if request.param == "postgresql":
        url = request.getfixturevalue("pg_url")
    elif request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'm.db'}"
    else:
        url = "memory://"
    m = Memory(url, embedder="hashing", background=False)
    yield m
    m.close()


@pytest.mark.parametrize("reverse", [False, True], ids=["typed-plain", "typed-accented"])
def test_a_word_typed_with_or_without_accents_finds_its_text(mem: Memory, reverse: bool) -> None:
    for n, pair in enumerate(PAIRS):
        stored, typed = reversed(pair) if reverse else pair
        scope = Scope("t", f"u{n}", session="s")
        for text in DISTRACTORS[:2]:
            mem.add_message(scope, "user", text)
        want = mem.add_message(scope, "user", f"the meeting with {stored} went well").id
        mem.add_message(scope, "user", DISTRACTORS[2])
        for mode in ("lexical", "hybrid"):
            hits = [h.record.id for h in mem.search(Scope("t", f"u{n}"), typed, mode=mode)]
            assert hits and hits[0] == want, (stored, typed, mode)


@pytest.mark.parametrize(
    "distractor", ["I need to buy shoes", "we went to the zoo", "Zoey's birthday is on Friday"]
)
def test_the_default_search_for_zoe_puts_zoe_first(mem: Memory, distractor: str) -> None:
    """The default (hybrid) search for "zoe": before fold24 each of these messages came
    first (the hashing embedder's character n-grams; no lexical match for "zoë")."""
    scope = Scope("t", "ana", session="s")
    zoe = mem.add_message(scope, "user", "the meeting with Zoë went well").id
    mem.add_message(scope, "user", distractor)
    assert mem.search(Scope("t", "ana"), "zoe")[0].record.id == zoe
    assert [h.record.id for h in mem.search(Scope("t", "ana"), "Zoe", mode="lexical")] == [zoe]


def test_words_that_differ_by_more_than_accents_stay_apart(mem: Memory) -> None:
    """Folding writes a letter without its marks; it does not merge different letters of
    other scripts: Hindi दिल/दाल, Arabic, Hebrew and Cyrillic й/и keep their terms."""
    scope = Scope("t", "bo", session="s")
    ids = {
        t: mem.add_message(scope, "user", t).id
        for t in ["मेरा दिल टूट गया", "मुझे दाल पसंद है", "мой край", "мои книги"]
    }
    for query, text, other in [
        ("दिल", "मेरा दिल टूट गया", "मुझे दाल पसंद है"),
        ("край", "мой край", "мои книги"),
    ]:
        hits = [h.record.id for h in mem.search(Scope("t", "bo"), query, mode="lexical")]
        assert hits and hits[0] == ids[text] and ids[other] not in hits, query
