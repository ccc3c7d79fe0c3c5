"""Schema 15 (SQLite): records indexed with accents (by 918f2db's tokenizer, kept as
``tokenize_v14``) are re-termed on upgrade, so "zoe" finds "Zoë" and "café" finds "café"
again (the query's terms are folded now).

- a file at schema 14 upgrades to exactly the index a fresh write of the same records
  makes now (replies indexed under an accented question included), its statistics equal
  a recount, and the ASCII tenant's rows and hits are bit-equal;
- a file of ASCII text only is not rewritten: no row is read into Python, every lexical
  row is as it was;
- the step is one transaction: a failure in the middle leaves the schema-14 file whole.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from memstrata.filters import Filters
from memstrata.scope import Scope
from memstrata.search.tokenize import tokenize, tokenize_v14
from memstrata.store import Store, open_store
from memstrata.store.sqlite.migrations import SCHEMA_VERSION
from store.reterm_files import Turn, indexed_file, lex_tables
from store.test_lex16_index_upkeep import check_statistics

EN, ACC = Scope("acme", "ana"), Scope("globex", "zoe")
# (scope, session, text): turns in order; a turn after a question is indexed under it.
TURNS: list[Turn] = [
    (EN, "s1", "We adopted a puppy this weekend!"),
    (EN, "s1", "Lovely! What did you name the puppy?"),
    (EN, "s1", "Biscuit. My niece picked it."),
    (EN, "s2", "The cafe on the corner closed"),
    (ACC, "a1", "The meeting with Zoë went well"),
    (ACC, "a1", "Did you order a café au lait with José?"),
    (ACC, "a1", "Yes, and a croissant."),  # ASCII, indexed under the accented question
    (ACC, "a2", "We flew home from İstanbul"),  # İ: its old terms hold no accent
    (ACC, "a2", "São Paulo was hot"),
    (ACC, "a2", "Αθήνα ήταν υπέροχη"),
    (ACC, "a2", "दिल टूटा café"),  # Hindi (schema 11's scripts) and an accent
    (ACC, None, "the monthly report is due on Friday"),
    (ACC, "a3", "Tiếng Việt không khó"),
    (ACC, "a3", "naïve résumés from Łódź"),
]
QUERIES = {
    EN: ["puppy name", "Biscuit", "cafe", "niece"],
    ACC: ["zoe", "café", "cafe", "jose", "istanbul", "sao", "ΑΘΗΝΑ", "दिल", "lodz"],
}


def _rows(path: Path) -> dict[str, str]:
    """Each record's indexed terms, by its text."""
    conn = sqlite3.connect(path)
    try:
        return {
            str(raw): str(t)
            for raw, t in conn.execute(
                "SELECT r.raw, d.terms FROM lex_docs d JOIN records r ON r.seq = d.seq"
            )
        }
    finally:
        conn.close()


def _ids(path: Path) -> dict[str, str]:
    conn = sqlite3.connect(path)
    try:
        return {str(raw): str(i) for i, raw in conn.execute("SELECT id, raw FROM records")}
    finally:
        conn.close()


def _hits(store: Store, terms: Callable[[str], list[str]]) -> dict[str, list[str]]:
    return {
        f"{s.tenant} {q}": [c.id for c in store.lexical_search(s, terms(q), 10, Filters())]
        for s, queries in QUERIES.items()
        for q in queries
    }


def _as_schema_14(path: Path) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA user_version = 14")
    conn.close()


def _schema14_file(
    tmp_path: Path, only: Scope | None = None
) -> tuple[Path, dict[str, list[str]], dict[str, list[str]]]:
    """A file indexed as 918f2db indexed it, at version 14; the hits 918f2db's queries
    found in it, and those a folded query finds in it before the upgrade."""
    path = tmp_path / "old.db"
    indexed_file(path, TURNS, tokenize_v14, only)
    store = open_store(f"sqlite:///{path}")
    try:
        old, stale = _hits(store, tokenize_v14), _hits(store, tokenize)
    finally:
        store.close()
    _as_schema_14(path)
    return path, old, stale


def test_upgrade_gives_the_index_a_fresh_write_makes(tmp_path: Path) -> None:
    path, old, stale = _schema14_file(tmp_path)
    before = _rows(path)
    fresh = tmp_path / "new.db"
    indexed_file(fresh, TURNS, tokenize)
    store = open_store(f"sqlite:///{path}")
    try:
        after = _hits(store, tokenize)
        check_statistics(store)
    finally:
        store.close()
    # 17: public part (caller29), 18: roles (role29), 19: public rows (caller30), 20: every
    # turn's reply terms by today's rule (reterm30), 21: the index of citations (purge31),
    # 22: its links (purge31b)
    assert lex_tables(path)[0] == SCHEMA_VERSION == 22
    got = _rows(path)
    assert got == _rows(fresh)
    changed = {t for t in before if before[t] != got[t]}
    assert changed == {t for _, _, t in TURNS[4:] if t != "the monthly report is due on Friday"}
    for q in QUERIES[EN]:  # an ASCII tenant: bit-equal, found
        assert after[f"acme {q}"] == old[f"acme {q}"] == stale[f"acme {q}"] != []
    ids = _ids(path)
    for q, text in [
        ("zoe", "The meeting with Zoë went well"),
        ("jose", "Did you order a café au lait with José?"),
        ("istanbul", "We flew home from İstanbul"),
        ("sao", "São Paulo was hot"),
        ("ΑΘΗΝΑ", "Αθήνα ήταν υπέροχη"),
        ("lodz", "naïve résumés from Łódź"),
    ]:
        assert after[f"globex {q}"][0] == ids[text], q
        assert ids[text] not in old[f"globex {q}"], q  # 918f2db: typed without, not found
    cafe = {ids["Did you order a café au lait with José?"], ids["दिल टूटा café"]}
    assert cafe <= set(old["globex café"])  # 918f2db found them
    assert not cafe & set(stale["globex café"])  # a folded query on the old index: lost
    assert cafe <= set(after["globex café"]) and cafe <= set(after["globex cafe"])
    # the ASCII reply is indexed under its question's folded terms now
    reply = ids["Yes, and a croissant."]
    assert reply in after["globex jose"] and reply not in stale["globex jose"]


def test_an_ascii_store_is_not_rewritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import memstrata.search.reterm as reterm_module
    import memstrata.search.scripts as scripts

    path, old, _ = _schema14_file(tmp_path, only=EN)
    want = lex_tables(path)
    assert want[0] == 14 and want[-1]
    calls: list[str] = []
    for module, name in ((scripts, "may_fold"), (reterm_module, "reterm")):
        real = getattr(module, name)

        def counted(*args: object, _real: object = real, _name: str = name, **kw: object) -> object:
            calls.append(_name)
            return _real(*args, **kw)  # type: ignore[operator]

        monkeypatch.setattr(module, name, counted)
    store = open_store(f"sqlite:///{path}")
    try:
        assert _hits(store, tokenize) == old
    finally:
        store.close()
    assert calls == []  # no row read into Python: SQLite passed over every ASCII row
    assert lex_tables(path) == [SCHEMA_VERSION, *want[1:]]


def test_a_failing_upgrade_leaves_schema_14_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstrata.store.sqlite import lexical

    path, _, _ = _schema14_file(tmp_path)
    want = lex_tables(path)
    index = lexical.index

    def index_then_fail(*args: object, **kw: object) -> None:
        index(*args, **kw)  # type: ignore[arg-type]  # written, uncommitted
        raise RuntimeError("killed mid-migration")

    monkeypatch.setattr(lexical, "index", index_then_fail)
    with pytest.raises(RuntimeError, match="killed mid-migration"):
        open_store(f"sqlite:///{path}")
    monkeypatch.undo()
    assert lex_tables(path) == want
    fresh = tmp_path / "new.db"
    indexed_file(fresh, TURNS, tokenize)
    open_store(f"sqlite:///{path}").close()
    assert _rows(path) == _rows(fresh)
