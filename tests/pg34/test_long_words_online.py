"""Step 32's re-term of long words is made before the upgrade's transaction (pg34), a part
at a time, and the step re-reads only the rows written since; whatever stops it, the store
is whole.

Before, the step scanned every record's ``lex_tokens`` inside the migration's transaction,
under the schema's exclusive version lock that every write of this memstrata waits for
(0.4-0.7 s at 110,000 records). The store at schema 31 is made from today's (as
tests/pg32/test_long_words_upgrade.py): notes whose ``lex_tokens`` and postings are set
back to a whole long word, as a memstrata before session 31's bound indexed them. All
three tests fail before (the write waited; the word written meanwhile stayed whole; no
pre-pass to kill)."""

from __future__ import annotations

import os
import random
import signal
import string
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memstrata import Memory, Scope
from memstrata.store import fts5, open_store
from memstrata.store.postgres import lexical
from memstrata.store.postgres.schema import SCHEMA_VERSION
from memstrata.store.sqlite.codec import scope_token
from store.reterm_files import _pg, pg_as_schema, pg_version

SRC = str(Path(__file__).resolve().parents[2] / "src")
ALICE = Scope("acme", "alice", session="s1")
TOK = scope_token("acme", "alice")


def _word(seed: int) -> str:
    """1,500 letters, ending in "qz" (no stemmer's rule changes that ending)."""
    r = random.Random(seed)
    return "".join(r.choice(string.ascii_lowercase) for _ in range(1_498)) + "qz"


def _unbound(url: str, rid: str, word: str) -> int:
    """Set a record's long word back to the whole word (as a memstrata before the bound
    indexed it); its seq."""
    with _pg(url) as conn:
        seq, tokens = conn.execute(
            "SELECT seq, lex_tokens FROM records WHERE id = %s", (rid,)
        ).fetchone()
        whole = [word if t == fts5.bounded(word) else t for t in tokens]
        assert whole != list(tokens)
        conn.execute("UPDATE records SET lex_tokens = %s WHERE seq = %s", (whole, seq))
        lexical.index(conn, [(seq, "acme", TOK, whole)], old=[(seq, "acme", TOK, list(tokens))])
    return int(seq)


def _state(url: str, seq: int, word: str) -> str:
    """ "bounded": the record holds the bounded token and one posting names it, none the
    word; "whole": the reverse; else "mixed" (tokens and postings disagree)."""
    with _pg(url) as conn:
        (tokens,) = conn.execute("SELECT lex_tokens FROM records WHERE seq = %s", (seq,)).fetchone()
        postings = {
            t: n
            for t, n in conn.execute(
                "SELECT token, count(*) FROM lex_postings WHERE seq = %s AND token = ANY(%s) "
                "GROUP BY token",
                (seq, [word, fts5.bounded(word)]),
            )
        }
    if fts5.bounded(word) in tokens and word not in tokens and postings == {fts5.bounded(word): 1}:
        return "bounded"
    if word in tokens and fts5.bounded(word) not in tokens and postings == {word: 1}:
        return "whole"
    return "mixed"


def _bounded_whole(url: str, seq: int, word: str) -> bool:
    return _state(url, seq, word) == "bounded"


def _store(url: str, words: int) -> tuple[Memory, list[tuple[str, int, str]]]:
    """An open memory (left open: it writes on as a process of this memstrata opened
    before the upgrade) with ``words`` notes holding a long word set back to whole, a
    short note between each two; the store marked as left by schema 31."""
    mem = Memory(url, embedder="hashing", background=False)
    made = []
    for k in range(words):
        word = _word(k)
        rid = mem.add(ALICE, f"the key {k} is {word} keep it").id
        mem.add(ALICE, f"a short note {k}")
        made.append((rid, _unbound(url, rid, word), word))
    pg_as_schema(url, 31)
    return mem, made


def test_a_write_goes_on_while_the_words_are_re_termed(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process of this memstrata opened before adds a note while the upgrade re-terms
    the long words: before pg34 it waited for the migration's commit (the step ran under
    the exclusive version lock), here it is written at once."""
    mem, made = _store(pg_url, 2)
    outcomes: list[str] = []
    inner = fts5.bounded

    def write_meanwhile(token: str) -> str:
        if not outcomes:
            outcomes.append("started")
            added = threading.Thread(target=lambda: mem.add(ALICE, "written meanwhile"))
            added.start()
            added.join(5)
            outcomes.append("waited" if added.is_alive() else "written")
        return inner(token)

    monkeypatch.setattr(fts5, "bounded", write_meanwhile)
    try:
        open_store(pg_url).close()
    finally:
        monkeypatch.undo()
        mem.close()
    assert outcomes == ["started", "written"]
    assert pg_version(pg_url) == SCHEMA_VERSION
    assert all(_bounded_whole(pg_url, seq, word) for _, seq, word in made)


def test_a_long_word_written_during_the_pass_is_re_termed_by_the_step(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the pass re-terms the last note, a process of an older memstrata (no version
    lock) writes a whole long word into the first note, which the pass has read already:
    the step, in the transaction, re-terms it (it was written since the pass started).
    Before pg34 the step had read that row already: it wrote its own tokens over the
    late ones, whose posting was left behind ("mixed")."""
    mem, made = _store(pg_url, 3)
    mem.close()
    try:
        from memstrata.store.postgres import bounded

        monkeypatch.setattr(bounded, "PART", 1)
    except ImportError:  # before pg34: the step reads the three notes at once
        pass
    _, first, first_word = made[0]
    late = _word(99)
    inner = fts5.bounded
    done: list[int] = []

    def write_meanwhile(token: str) -> str:
        if not done and len(token) > 1000 and token == _word(2):  # the last note's
            done.append(1)
            with _pg(pg_url) as conn:
                (tokens,) = conn.execute(
                    "SELECT lex_tokens FROM records WHERE seq = %s", (first,)
                ).fetchone()
                conn.execute(
                    "UPDATE records SET lex_tokens = %s WHERE seq = %s", ([*tokens, late], first)
                )
                now = [*tokens, late]
                lexical.index(conn, [(first, "acme", TOK, now)], old=[(first, "acme", TOK, tokens)])
        return inner(token)

    monkeypatch.setattr(fts5, "bounded", write_meanwhile)
    try:
        open_store(pg_url).close()
    finally:
        monkeypatch.undo()
    assert done
    assert pg_version(pg_url) == SCHEMA_VERSION
    assert _bounded_whole(pg_url, first, late)
    assert _bounded_whole(pg_url, first, first_word)
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        assert [h.record.id for h in mem.search(ALICE.user_scope, late, top_k=1)] == [made[0][0]]


KILLED = """
import sys, time
sys.path[:0] = [{src!r}]
from memstrata.store.postgres import bounded
from memstrata.store import open_store
bounded.PART = 1
inner = bounded._part
parts = []
def slow(cur, last, since):
    out = inner(cur, last, since)
    parts.append(out)
    if len(parts) == 2:
        open({marker!r}, "w").close()
        time.sleep(120)
    return out
bounded._part = slow
open_store({url!r})
"""


def test_an_upgrade_killed_in_the_pass_is_made_again(pg_url: str, tmp_path: Path) -> None:
    """kill -9 of the upgrading process in the second part of the pass (its transaction
    open): the store is at 31, the first note re-termed (tokens and postings), the second
    and third whole as they were (the server rolled the second part back); the next open
    finishes."""
    mem, made = _store(pg_url, 3)
    mem.close()
    marker = tmp_path / "in-the-pass"
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED.format(src=SRC, marker=str(marker), url=pg_url)],
        env={**os.environ, "PYTHONPATH": SRC},
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert child.poll() is None, "the upgrading process ended on its own"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    assert pg_version(pg_url) == 31
    assert [_state(pg_url, seq, word) for _, seq, word in made] == ["bounded", "whole", "whole"]
    open_store(pg_url).close()
    assert pg_version(pg_url) == SCHEMA_VERSION
    assert all(_bounded_whole(pg_url, seq, word) for _, seq, word in made)
