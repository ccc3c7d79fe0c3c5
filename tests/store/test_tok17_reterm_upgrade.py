"""Schema 11: records indexed under the old terms of Korean, Japanese, Hindi, Thai …
are re-termed on upgrade (SQLite), so stored and query terms meet again.

- a file indexed as schema 10 left it (old terms, replies under their question's old
  terms) upgrades to exactly the index a fresh write of the same records makes now;
- English and Chinese records are untouched and their hits bit-equal, in a tenant of
  their own; the statistics equal a recount;
- Korean/Hindi/Thai words not found (or found below noise) before are found first after;
- the upgrade is one transaction: a kill -9 in the middle leaves the schema-10 file as it
  was, and the next open upgrades it.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from memstrata.filters import Filters
from memstrata.scope import Scope
from memstrata.search.tokenize import tokenize, tokenize_v10
from memstrata.store import Store, open_store
from memstrata.store.sqlite.migrations import SCHEMA_VERSION

from .reterm_files import Turn, indexed_file, lex_tables
from .test_lex16_index_upkeep import check_statistics

EN, MIX = Scope("acme", "ana"), Scope("globex", "min")
KO = Scope("initech", "jun")  # a tenant whose every record is re-termed
# (scope, session, text): turns in order; a turn after a question is indexed under it.
TURNS: list[Turn] = [
    (EN, "s1", "We adopted a puppy this weekend!"),
    (EN, "s1", "Lovely! What did you name the puppy?"),
    (EN, "s1", "Biscuit. My niece picked it."),
    (EN, "s2", "我昨天去了市场买苹果"),
    (EN, "s2", "你买了多少苹果？"),
    (EN, "s2", "五个，很甜。"),
    (MIX, "k1", "어제 서울에서 오랜 친구를 만났어요."),
    (MIX, "k1", "서울 어디에서 만났어요?"),
    (MIX, "k1", "강남역 근처 카페에서요."),
    (MIX, "k1", "Where did you eat after that?"),
    (MIX, "k1", "삼겹살 집에 갔어요."),
    (MIX, "h1", "मैं हिन्दी बोलता हूँ और किताब पढ़ता हूँ"),
    (MIX, "h1", "कौन सी किताब पढ़ते हो?"),
    (MIX, "h1", "A history book."),
    (MIX, "t1", "ฉันไปตลาดเมื่อวานนี้กับแม่ของฉัน"),
    (MIX, None, "東京に行きました。コーヒーを飲みたい"),
    (MIX, None, "the monthly report is due on Friday"),
    (MIX, "t1", "ซื้ออะไรที่ตลาด?"),
    (MIX, "t1", "มะม่วงสองกิโล"),
    (KO, "j1", "부산에 살아요"),
    (KO, "j1", "바다가 가까워요?"),
    (KO, "j1", "네, 바다가 보여요"),
]
QUERIES = {
    EN: ["puppy name", "Biscuit", "苹果", "多少苹果", "niece"],
    MIX: ["서울", "카페", "किताब", "हिन्दी", "ตลาด", "コーヒー", "monthly report", "eat"],
    KO: ["부산", "바다"],
}


def _index(path: Path) -> dict[str, str]:
    conn = sqlite3.connect(path)
    try:
        return {
            str(i): str(t)
            for i, t in conn.execute(
                "SELECT r.id, d.terms FROM lex_docs d JOIN records r ON r.seq = d.seq"
            )
        }
    finally:
        conn.close()


def _hits(store: Store) -> dict[str, list[tuple[str, float]]]:
    return {
        f"{s.tenant} {q}": [
            (c.id, c.score) for c in store.lexical_search(s, tokenize(q), 10, Filters())
        ]
        for s, queries in QUERIES.items()
        for q in queries
    }


def _schema10_file(tmp_path: Path) -> tuple[Path, dict[str, list[tuple[str, float]]]]:
    """A file indexed by the old tokenizer, at version 10, and its hits read as they are."""
    path = tmp_path / "old.db"
    indexed_file(path, TURNS, tokenize_v10)
    store = open_store(f"sqlite:///{path}")
    try:
        hits = _hits(store)
    finally:
        store.close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA user_version = 10")
    conn.close()
    return path, hits


def _by_text(path: Path) -> dict[str, str]:
    conn = sqlite3.connect(path)
    try:
        ids = {str(i): str(raw) for i, raw in conn.execute("SELECT id, raw FROM records")}
    finally:
        conn.close()
    return {ids[i]: t for i, t in _index(path).items()}


def test_upgrade_gives_the_index_a_fresh_write_makes(tmp_path: Path) -> None:
    path, before = _schema10_file(tmp_path)
    old = _by_text(path)
    fresh = tmp_path / "new.db"
    indexed_file(fresh, TURNS, tokenize)
    store = open_store(f"sqlite:///{path}")
    try:
        after = _hits(store)
        check_statistics(store)
    finally:
        store.close()
    assert lex_tables(path)[0] == SCHEMA_VERSION
    got, want = _by_text(path), _by_text(fresh)
    assert got == want
    changed = {t for t in old if old[t] != got[t]}
    # English and Chinese turns (and the English reply to an English question in the
    # mixed tenant) keep their terms; every Korean/Hindi/Thai/Japanese one changed, as
    # did the English reply indexed under a Hindi question.
    assert "Biscuit. My niece picked it." not in changed and "五个，很甜。" not in changed
    assert "the monthly report is due on Friday" not in changed
    assert "A history book." in changed and "어제 서울에서 오랜 친구를 만났어요." in changed
    for q in QUERIES[EN]:  # a tenant of English and Chinese only: bit-equal
        assert after[f"acme {q}"] == before[f"acme {q}"] and after[f"acme {q}"]
    ids = {raw: i for i, raw in _ids(path).items()}
    for q, text in [
        ("서울", "어제 서울에서 오랜 친구를 만났어요."),
        ("ตลาด", "ฉันไปตลาดเมื่อวานนี้กับแม่ของฉัน"),
        ("किताब", "मैं हिन्दी बोलता हूँ और किताब पढ़ता हूँ"),
        ("コーヒー", "東京に行きました。コーヒーを飲みたい"),
    ]:
        hits = [i for i, _ in after[f"globex {q}"]]
        # found, and only below records indexed under every term of the word too (a
        # reply indexed under a question that holds it)
        assert ids[text] in hits, q
        above = [_ids(path)[i] for i in hits[: hits.index(ids[text])]]
        assert all(set(tokenize(q)) <= set(got[t].split()) for t in above), q
    assert [i for i, _ in after["initech 부산"]] == [ids["부산에 살아요"]]
    assert ids["ฉันไปตลาดเมื่อวานนี้กับแม่ของฉัน"] not in [i for i, _ in before["globex ตลาด"]]


def _ids(path: Path) -> dict[str, str]:
    conn = sqlite3.connect(path)
    try:
        return {str(i): str(raw) for i, raw in conn.execute("SELECT id, raw FROM records")}
    finally:
        conn.close()


_KILLED_MID_UPGRADE = """
import os, signal, sys
from memstrata.store import open_store
from memstrata.store.sqlite import lexical

index = lexical.index

def index_then_die(conn, docs):
    index(conn, docs)  # the re-termed rows are written, uncommitted
    os.kill(os.getpid(), signal.SIGKILL)

lexical.index = index_then_die
open_store("sqlite:///" + sys.argv[1])
"""


def test_a_kill_9_in_the_middle_of_the_upgrade_leaves_schema_10_intact(tmp_path: Path) -> None:
    path, _ = _schema10_file(tmp_path)
    before = lex_tables(path)
    assert before[0] == 10
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_MID_UPGRADE, str(path)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert lex_tables(path) == before  # version 10, every lexical row as it was
    fresh = tmp_path / "new.db"
    indexed_file(fresh, TURNS, tokenize)
    store = open_store(f"sqlite:///{path}")
    try:
        check_statistics(store)
    finally:
        store.close()
    assert lex_tables(path)[0] == SCHEMA_VERSION
    assert _by_text(path) == _by_text(fresh)
