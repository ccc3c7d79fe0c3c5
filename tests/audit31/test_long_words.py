"""A word longer than PostgreSQL's index keys hold.

PostgreSQL keeps each lexical token in btree keys (``lex_postings``, ``lex_df``) whose rows
hold at most 2,704 bytes: a note or a turn holding a word of 3,000 letters (a hex dump,
a long number, a pasted key) was refused ("PostgreSQL ... failed: index row size 6248
exceeds btree version 4 maximum 2704 for index lex_postings_pkey"), a knowledge
document too, while SQLite and ``memory://`` stored it. Session 31's audit: such a token
is kept as its first 200 characters and a hash of the whole (``fts5.bounded``), in the
record's postings and in a query alike, so the word still finds its record, and only it."""

from __future__ import annotations

import random
import string

import pytest

from memstrata import Memory, Scope
from memstrata.store import fts5

ALICE = Scope("acme", "alice", session="s1")


def _word(n: int, seed: int, alphabet: str = string.ascii_lowercase) -> str:
    r = random.Random(seed)
    return "".join(r.choice(alphabet) for _ in range(n))


@pytest.mark.parametrize("mem", ["memory", "sqlite", "postgresql"], indirect=True)
def test_long_words_are_stored_and_found(mem: Memory) -> None:
    long_word = _word(3_000, 1)
    twin = long_word[:2_000] + _word(1_000, 2)  # the same start: another word
    digits = _word(9_000, 3, string.digits)
    wide = _word(400, 4, "".join(map(chr, range(0x20000, 0x20400))))  # 1,600 bytes
    note = mem.add(ALICE, f"the key is {long_word} keep it")
    other = mem.add(ALICE, f"the other key is {twin} keep it too")
    turn = mem.add_message(ALICE, "user", f"my number is {digits}")
    mem.add_message(ALICE, "user", f"written {wide} here")
    mem.knowledge.ingest(ALICE, f"a manual with {long_word[:2_500]} in it")
    assert [h.record.id for h in mem.search(ALICE.user_scope, long_word, top_k=1)] == [note.id]
    assert [h.record.id for h in mem.search(ALICE.user_scope, twin, top_k=1)] == [other.id]
    assert [h.record.id for h in mem.search(ALICE.user_scope, digits, top_k=1)] == [turn.id]
    edited = mem.update(ALICE, note.id, content=f"now {digits} only", expected_version=1)
    assert edited.version == 2
    mem.purge(ALICE.user_scope)
    assert mem.list(ALICE.user_scope) == []


@pytest.mark.parametrize("mem", ["postgresql"], indirect=True)
def test_long_words_beside_the_longest_ids(mem: Memory) -> None:
    """The widest tenant (160 four-byte characters, 640 bytes) beside the token in ``lex_df``."""
    tenant = _word(160, 5, "".join(map(chr, range(0x20000, 0x20400))))
    scope = Scope(tenant, "bob")
    note = mem.add(scope, f"see {_word(5_000, 6)}")
    assert mem.get(scope, note.id).id == note.id


def test_bounded_tokens() -> None:
    short = "a" * 250  # 1,000 bytes of ASCII: kept
    assert fts5.bounded(short) == short
    assert fts5.bounded("é" * 500) == "é" * 500  # 1,000 bytes
    long = "é" * 501
    made = fts5.bounded(long)
    assert made.startswith("é" * 200 + "#") and len(made.encode()) < 500
    assert fts5.bounded(long) == made and fts5.bounded("é" * 500 + "e") != made
    assert fts5.tokens(long) == (made,)
