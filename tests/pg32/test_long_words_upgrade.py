"""Step 32 (pg32): a word of 1,000-2,650 bytes a PostgreSQL store indexed whole before
session 31's bound (``fts5.bounded``) takes the bounded token, so that word finds its record
again (a query asks for the bounded token: before, not until the record was written anew).

The store before the bound is made from today's: the note's ``lex_tokens`` and postings
set back to the whole word (``lexical.index``, as an older memstrata indexed it)."""

from __future__ import annotations

import random
import string

from memstrata import Memory, Scope
from memstrata.store import fts5
from memstrata.store.postgres import lexical
from memstrata.store.postgres.schema import SCHEMA_VERSION
from memstrata.store.sqlite.codec import scope_token
from store.reterm_files import _pg, pg_as_schema, pg_version

ALICE = Scope("acme", "alice", session="s1")


def _hits(mem: Memory, query: str) -> list[str]:
    return [h.record.id for h in mem.search(ALICE.user_scope, query, top_k=3)]


def test_step_32_bounds_a_long_word_written_before(pg_url: str) -> None:
    r = random.Random(7)
    word = "".join(r.choice(string.ascii_lowercase) for _ in range(1_500))
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        note = mem.add(ALICE, f"the key is {word} keep it")
        other = mem.add(ALICE, "the key is short, keep it")
        assert _hits(mem, word)[0] == note.id
    with _pg(pg_url) as conn:  # as a memstrata before the bound indexed it: the whole word
        seq, tokens = conn.execute(
            "SELECT seq, lex_tokens FROM records WHERE id = %s", (note.id,)
        ).fetchone()
        whole = [word if t == fts5.bounded(word) else t for t in tokens]
        assert whole != list(tokens)
        tok = scope_token("acme", "alice")
        conn.execute("UPDATE records SET lex_tokens = %s WHERE seq = %s", (whole, seq))
        lexical.index(conn, [(seq, "acme", tok, whole)], old=[(seq, "acme", tok, list(tokens))])
    pg_as_schema(pg_url, 31)
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        assert pg_version(pg_url) == SCHEMA_VERSION
        assert _hits(mem, word)[0] == note.id
        assert other.id in _hits(mem, "short key")
    with _pg(pg_url) as conn:
        (tokens,) = conn.execute("SELECT lex_tokens FROM records WHERE seq = %s", (seq,)).fetchone()
        assert fts5.bounded(word) in tokens and word not in tokens
        (postings,) = conn.execute(
            "SELECT count(*) FROM lex_postings WHERE token = %s", (word,)
        ).fetchone()
        assert postings == 0
