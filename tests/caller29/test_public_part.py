"""A caller's search of a wholly public memory counted the public records' rows and length
by a scan of the owner's rows on every search (caller28: ~6 ms on SQLite at 10k records
where the owner's search costs 0.3). The public part of each user's memory is now indexed on
its own, kept by every write in its transaction (``store/sqlite/lexical.py``, "the public
part"), and a caller's search reads its statistics and postings as the owner's search reads
the owner's.

- the cost is counted, not timed: SQLite's virtual-machine steps of a caller's store search
  (a progress handler on the store's read connection) at 100 and at 1,000 public notes that
  do not hold the query's word: they grew with the notes before (fails before), not now;
- every write keeps the public part right: after each one the public docs are exactly the
  active public records (a message by its own words) and their statistics a recount;
- a caller's mean length counts a shared reply by its own words (before: its indexed length,
  the question's words included, so the length of an unshared question moved a caller's
  scores; fails before)."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memstrata import Memory, Scope
from memstrata.filters import Filters
from memstrata.search.tokenize import tokenize
from memstrata.store.sqlite import lexical
from memstrata.store.sqlite.codec import scope_token
from memstrata.store.sqlite.store import SQLiteStore
from sqlite_steps import sqlite_store, vm_steps

BOB = Scope("acme", "bob")
CAROL = BOB.as_caller("carol")
DAVE = Scope("acme", "dave")


@pytest.fixture
def lite(tmp_path: Path) -> Iterator[Memory]:
    m = Memory(f"sqlite:///{tmp_path / 'p.db'}", embedder="hashing", background=False)
    yield m
    m.close()


def _steps(store: SQLiteStore, terms: list[str]) -> int:
    return vm_steps(store, lambda: store.lexical_search(CAROL, terms, 10, Filters()))


def test_a_callers_public_search_does_not_grow_with_the_owner(lite: Memory) -> None:
    for i in range(5):
        lite.add(BOB, f"harbour ferry note {i}", visibility="public")
    store = sqlite_store(lite)
    counted = []
    added = 0
    for total in (100, 1000):
        while added < total:
            lite.add(BOB, f"filler words only {added}", visibility="public")
            added += 1
        hits = store.lexical_search(CAROL, ["harbour"], 10, Filters())
        assert len(hits) == 5
        counted.append(_steps(store, ["harbour"]))
    # caller28 scanned every public row: ~10x the steps at 10x the notes
    assert counted[1] < counted[0] * 1.5, counted


def _public_docs(conn: sqlite3.Connection) -> set[tuple[int, str, int, str]]:
    return {
        (-int(seq), str(terms), int(length), str(tok))
        for seq, terms, length, tok in conn.execute(
            "SELECT d.seq, d.terms, d.len, s.scope_tok FROM lex_docs d JOIN lex_scopes s ON "
            "s.id = d.scope WHERE d.seq < 0"
        )
    }


def _expected(conn: sqlite3.Connection) -> set[tuple[int, str, int, str]]:
    out = set()
    for seq, tenant, user, kind, raw, status, vis, terms in conn.execute(
        "SELECT r.seq, r.tenant, r.user, r.type, r.raw, r.status, r.visibility, d.terms "
        "FROM records r JOIN lex_docs d ON d.seq = r.seq"
    ):
        if status != "active" or vis != "public":
            continue
        text = lexical.terms_text(tokenize(raw)) if kind == "message" else str(terms)
        length = len(lexical.document_tokens(text)) + 1 if text else 1
        out.add((int(seq), text, length, scope_token(*lexical.public_owner(tenant, user))))
    return out


def _check(mem: Memory) -> None:
    """The public docs are the active public records' (a message by its own words), and
    each public part's statistics are a recount of its docs."""
    with sqlite_store(mem)._read() as c:
        assert _public_docs(c) == _expected(c)
        df: Counter[tuple[int, str]] = Counter()
        totals: Counter[tuple[int, str]] = Counter()
        tenants = set()
        for tid, length, text in c.execute(
            "SELECT s.tenant, d.len, d.terms FROM lex_docs d JOIN lex_scopes s ON "
            "s.id = d.scope WHERE d.seq < 0"
        ):
            tenants.add(int(tid))
            df.update((int(tid), t) for t in set(lexical.document_tokens(text) if text else []))
            totals[int(tid), "docs"] += 1
            totals[int(tid), "tokens"] += int(length)
        public = {
            int(tid)
            for (tid,) in c.execute(
                "SELECT DISTINCT s.tenant FROM lex_scopes s JOIN lex_tenants t ON "
                "t.id = s.tenant WHERE s.id IN (SELECT DISTINCT scope FROM lex_docs "
                "WHERE seq < 0)"
            )
        }
        stored: Counter[tuple[int, str]] = Counter()
        for tid, docs, tokens in c.execute("SELECT id, docs, tokens FROM lex_tenants"):
            if int(tid) in public:
                stored[int(tid), "docs"] += int(docs)
                stored[int(tid), "tokens"] += int(tokens)
        assert stored == totals
        got_df = Counter(
            {
                (int(t), str(k)): int(n)
                for t, k, n in c.execute("SELECT tenant, token, df FROM lex_df")
                if int(t) in public
            }
        )
        assert got_df == +df


def test_every_write_keeps_the_public_part(lite: Memory) -> None:
    every_write(lite, _check)


def every_write(lite: Memory, _check: Callable[[Memory], None]) -> None:
    """Writes of every kind, ``_check`` after each (SQLite's here, PostgreSQL's in
    test_public_part_pg.py)."""
    a = lite.add(BOB, "alpha harbour", visibility="public")
    b = lite.add(BOB, "alpha pier private")
    c = lite.add(BOB, "alpha shared by name")
    lite.set_access(BOB, c.id, visibility="shared", allowed_users=["carol"])
    _check(lite)
    lite.set_access(BOB, b.id, visibility="public")
    lite.set_access(BOB, a.id, visibility="private")
    _check(lite)
    rec = lite.get(BOB, b.id)
    lite.update(BOB, b.id, content="beta pier pier", expected_version=rec.version)
    _check(lite)
    lite.delete(BOB, b.id)
    _check(lite)
    lite.restore(BOB, b.id)
    _check(lite)
    lite.add_messages(
        BOB.with_session("s1"),
        [
            {"role": "user", "content": "what is the zanzibar code?"},
            {"role": "assistant", "content": "It is 4512."},
        ],
    )
    reply = next(r for r in lite.list(BOB) if r.role == "assistant")
    lite.set_access(BOB, reply.id, visibility="public")
    _check(lite)
    assert [h.record.id for h in lite.search(CAROL, "4512", mode="lexical")] == [reply.id]
    assert lite.search(CAROL, "zanzibar", mode="lexical") == []
    lite.purge(BOB, [b.id])
    _check(lite)
    lite.add(DAVE, "alpha for dave", visibility="public")
    _check(lite)
    report = lite.purge(DAVE)
    assert report.remaining == 0
    _check(lite)
    assert {h.record.id for h in lite.search(CAROL, "alpha", mode="lexical")} == {c.id}


def test_a_purged_users_public_part_is_gone(lite: Memory) -> None:
    lite.add(DAVE, "alpha for dave", visibility="public")
    lite.purge(DAVE)
    with sqlite_store(lite)._read() as conn:
        gone = scope_token(*lexical.public_owner("acme", "dave"))
        assert not conn.execute("SELECT 1 FROM lex_scopes WHERE scope_tok = ?", (gone,)).fetchall()
        assert not conn.execute("SELECT 1 FROM lex_docs WHERE seq < 0").fetchall()


def test_an_upgraded_file_gets_its_public_part(lite: Memory, tmp_path: Path) -> None:
    """Schema 17 indexes the public part of a file written before it (rows only)."""
    lite.add(BOB, "alpha harbour", visibility="public")
    lite.add(BOB, "alpha private")
    expected = [(h.record.id, h.score) for h in lite.search(CAROL, "alpha", mode="lexical")]
    lite.close()
    path = tmp_path / "p.db"
    conn = sqlite3.connect(path)
    seqs = [int(s) for (s,) in conn.execute("SELECT seq FROM lex_docs WHERE seq < 0")]
    assert seqs
    lexical.unindex(conn, seqs)
    conn.execute("PRAGMA user_version = 16")
    conn.commit()
    conn.close()
    again = Memory(f"sqlite:///{path}", embedder="hashing", background=False)
    try:
        _check(again)
        assert [(h.record.id, h.score) for h in again.search(CAROL, "alpha", mode="lexical")] == (
            expected
        )
    finally:
        again.close()


def test_a_callers_search_does_not_grow_with_unshared_records(lite: Memory) -> None:
    """Nor with the owner's private notes: caller28's scan read every row of the owner to
    count the public ones, so the time of a caller's search told how many records the owner
    kept unshared (VM steps 100 private notes -> 1,000: grew before, not now)."""
    for i in range(5):
        lite.add(BOB, f"harbour ferry note {i}", visibility="public")
    store = sqlite_store(lite)
    counted = []
    added = 0
    for total in (100, 1000):
        while added < total:
            lite.add(BOB, f"private filler words {added}")
            added += 1
        counted.append(_steps(store, ["harbour"]))
    assert counted[1] <= counted[0] * 1.1, counted  # before: 1,415 -> 10,415
