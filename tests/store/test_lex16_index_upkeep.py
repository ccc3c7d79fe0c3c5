"""The SQLite lexical index of schema 10 kept right by everything that touches it.

- a schema-9 file (FTS5 tables per tenant, as the store wrote them until schema 10) and a
  schema-8 file (one FTS5 table for all) upgrade in place with bit-equal hits;
- the upgrade is one transaction: a kill -9 in the middle leaves the schema-9 file intact,
  and the next open upgrades it;
- the statistics always equal a recount of the indexed rows (inserts, replaces, purges);
- a user's purge leaves no posting, scope row or statistic of the user; a tenant whose
  last user is purged leaves nothing in the index;
- a dump and restore (``copy_store``) gives a copy whose searches are bit-equal;
- each tenant's statistics are its own, under hashed keys (no raw tenant id).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from dataclasses import replace as evolve
from pathlib import Path

from memstrata.filters import Filters
from memstrata.scope import Scope
from memstrata.search.tokenize import tokenize
from memstrata.store import RecordWrite, Store, open_store
from memstrata.store.migrate import copy_store
from memstrata.store.sqlite import SQLiteStore, lexical
from memstrata.store.sqlite.codec import scope_token
from memstrata.store.sqlite.migrations import FTS5_TOKENIZE, SCHEMA_VERSION, fts5_tables

from .conftest import Maker

A, B, C = Scope("acme", "ana"), Scope("acme", "bo"), Scope("globex", "cy")
TEXTS = [
    "apple pie at the river",
    "a stone by the river bank",
    "the quiet harbour at dawn",
    "apple apple orchard in spring",
    "tea-pot and a・b on the shelf",
    "nothing to see here",
    "Über the river stone apple",
]
QUERIES = ["apple", "river stone", "quiet harbour apple", "tea-pot shelf", "a・b", "Über"]


def _fill(store: Store, maker: Maker) -> None:
    for n, scope in enumerate([A, B, C]):
        store.insert(
            [
                maker.write(text=f"{t} {i}", tenant=scope.tenant, user=scope.user)
                for i in range(4)
                for t in TEXTS[n:] + TEXTS[:n]
            ]
        )


def _hits(store: Store) -> list[list[tuple[str, float]]]:
    return [
        [(c.id, c.score) for c in store.lexical_search(s, tokenize(q), 20, Filters())]
        for s in (A, B, C)
        for q in QUERIES
    ]


def _fts5_hits(path: Path) -> list[list[tuple[str, float]]]:
    """The searches as the store ran them on a file of FTS5 tables (before schema 10)."""
    conn = sqlite3.connect(path)
    out = []
    try:
        for s in (A, B, C):
            t = lexical.tenant_key(s.tenant)
            for q in QUERIES:
                terms = list(dict.fromkeys(tokenize(q)))
                body = " OR ".join('"' + x.replace('"', '""') + '"' for x in terms)
                expr = f'scope_tok : "{scope_token(s.tenant, s.user)}" AND terms : ({body})'
                out.append(
                    [
                        (str(i), float(score))
                        for i, score in conn.execute(
                            f"SELECT r.id, -bm25({t}, 0.0, 1.0) FROM {t} JOIN records r "
                            f"ON r.seq = {t}.rowid WHERE {t} MATCH ? AND r.status = 'active' "
                            f"ORDER BY bm25({t}, 0.0, 1.0), r.seq LIMIT 20",
                            (expr,),
                        )
                    ]
                )
    finally:
        conn.close()
    return out


def _as_schema_9(path: Path) -> None:
    """Turn a schema-10 file into the file the store wrote at schema 9: every other table
    is the same; the index is one FTS5 table per tenant (rowid = seq, scope_tok, terms)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        tenants = [r[0] for r in conn.execute("SELECT DISTINCT tenant FROM records")]
        for tenant in tenants:
            name = lexical.tenant_key(tenant)
            conn.execute(
                f"CREATE VIRTUAL TABLE {name} USING fts5 (scope_tok, terms, {FTS5_TOKENIZE})"
            )
            conn.execute(
                f"INSERT INTO {name} (rowid, scope_tok, terms) SELECT d.seq, s.scope_tok, "
                "d.terms FROM lex_docs d JOIN lex_scopes s ON s.id = d.scope JOIN records r "
                "ON r.seq = d.seq WHERE r.tenant = ? ORDER BY d.seq",
                (tenant,),
            )
        for table in ("lex_tenants", "lex_scopes", "lex_postings", "lex_df", "lex_docs"):
            conn.execute(f"DROP TABLE {table}")
        conn.execute("PRAGMA user_version = 9")
        conn.execute("COMMIT")
    finally:
        conn.close()


def _schema(path: Path) -> tuple[int, list[str], dict[str, int]]:
    conn = sqlite3.connect(path)
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        names = fts5_tables(conn)
        rows = {n: int(conn.execute(f"SELECT count(*) FROM {n}").fetchone()[0]) for n in names}
        lex = [
            str(r[0])
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE name IN ('lex_postings', 'lex_df') "
                "ORDER BY name"
            )
        ]
    finally:
        conn.close()
    return version, lex, rows


def _schema9_file(tmp_path: Path) -> tuple[Path, list[list[tuple[str, float]]]]:
    path = tmp_path / "m.db"
    store = open_store(f"sqlite:///{path}")
    try:
        maker = Maker()
        _fill(store, maker)
        # a replaced record and a deleted one: the FTS5 rows the store left for them
        rec = store.get(A, "r0002")
        new = evolve(rec, version=rec.version + 1)
        store.replace(
            A, RecordWrite(new, None, tuple(tokenize("harbour apple tea"))), expected_version=1
        )
        store.purge(B, ["r0030"])
    finally:
        store.close()
    _as_schema_9(path)
    return path, _fts5_hits(path)


def test_a_schema_9_file_upgrades_in_place_with_bit_equal_hits(tmp_path: Path) -> None:
    path, want = _schema9_file(tmp_path)
    assert _schema(path)[:2] == (9, []) and sum(map(len, want)) > 30
    store = open_store(f"sqlite:///{path}")
    try:
        assert _hits(store) == want
        check_statistics(store)
    finally:
        store.close()
    assert _schema(path) == (SCHEMA_VERSION, ["lex_df", "lex_postings"], {})


def test_a_schema_8_file_of_one_shared_table_upgrades_through_9(tmp_path: Path) -> None:
    path, want = _schema9_file(tmp_path)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(f"CREATE VIRTUAL TABLE lexical USING fts5 (scope_tok, terms, {FTS5_TOKENIZE})")
        for name in fts5_tables(conn):
            conn.execute(
                f"INSERT INTO lexical (rowid, scope_tok, terms) "
                f"SELECT rowid, scope_tok, terms FROM {name}"
            )
            conn.execute(f"DROP TABLE {name}")
        conn.execute("PRAGMA user_version = 8")
    finally:
        conn.close()
    store = open_store(f"sqlite:///{path}")
    try:
        assert _hits(store) == want
    finally:
        store.close()
    assert _schema(path) == (SCHEMA_VERSION, ["lex_df", "lex_postings"], {})


_KILLED_MID_UPGRADE = """
import os, signal, sys
from memstrata.store import open_store
from memstrata.store.sqlite import lexical

index = lexical.index

def index_then_die(conn, docs):
    index(conn, docs)  # the first tenant's rows are written, uncommitted
    os.kill(os.getpid(), signal.SIGKILL)

lexical.index = index_then_die
open_store("sqlite:///" + sys.argv[1])
"""


def test_a_kill_9_in_the_middle_of_the_upgrade_leaves_schema_9_intact(tmp_path: Path) -> None:
    path, want = _schema9_file(tmp_path)
    before = _schema(path)
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_MID_UPGRADE, str(path)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert _schema(path) == before  # version 9, its FTS5 tables whole, no postings table
    assert _fts5_hits(path) == want
    store = open_store(f"sqlite:///{path}")
    try:
        assert _hits(store) == want
    finally:
        store.close()


def check_statistics(store: Store) -> None:
    """``lex_df``, ``lex_tenants`` and the postings equal a recount of ``lex_docs``."""
    assert isinstance(store, SQLiteStore)
    with store._read() as c:
        df: Counter[tuple[int, str]] = Counter()
        totals: Counter[tuple[int, str]] = Counter()
        postings: set[tuple[int, str, int, int, int]] = set()
        for seq, sid, tid, length, text in c.execute(
            "SELECT d.seq, d.scope, s.tenant, d.len, d.terms FROM lex_docs d "
            "JOIN lex_scopes s ON s.id = d.scope"
        ):
            tokens = lexical.document_tokens(text)
            assert length == len(tokens) + 1
            df.update((tid, t) for t in set(tokens))
            totals[tid, "docs"] += 1
            totals[tid, "tokens"] += length
            postings.update((sid, t, seq, n, length) for t, n in Counter(tokens).items())
        assert (
            Counter({(int(t), str(k)): int(n) for t, k, n in c.execute("SELECT * FROM lex_df")})
            == +df
        ), "lex_df"
        stats: Counter[tuple[int, str]] = Counter()
        for tid, docs, tokens in c.execute("SELECT id, docs, tokens FROM lex_tenants"):
            stats[int(tid), "docs"] += int(docs)
            stats[int(tid), "tokens"] += int(tokens)
        assert stats == totals
        assert {tuple(r) for r in c.execute("SELECT * FROM lex_postings")} == postings
        # a public part's doc (caller29) is its record's seq negated
        orphans = "SELECT 1 FROM lex_docs WHERE abs(seq) NOT IN (SELECT seq FROM records)"
        assert not c.execute(orphans).fetchall()
        stale = "SELECT 1 FROM lex_scopes WHERE tenant NOT IN (SELECT id FROM lex_tenants)"
        assert not c.execute(stale).fetchall()


def test_statistics_follow_inserts_replaces_and_purges(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'm.db'}")
    try:
        maker = Maker()
        _fill(store, maker)
        check_statistics(store)
        rec = store.get(A, "r0001")
        for terms in ("apple stone", "apple stone", "", "brand new words here"):
            new = evolve(rec, version=rec.version + 1)
            store.replace(
                A, RecordWrite(new, None, tuple(tokenize(terms))), expected_version=rec.version
            )
            rec = new
            check_statistics(store)
        store.purge(A, ["r0003"], reterm={"r0004": tokenize("kumquat marmalade")})
        check_statistics(store)
        assert [c.id for c in store.lexical_search(A, tokenize("kumquat"), 5, Filters())] == [
            "r0004"
        ]
    finally:
        store.close()


def _user_rows(path: Path, scope: Scope) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(
            conn.execute(
                "SELECT (SELECT count(*) FROM lex_scopes WHERE scope_tok = ?1) + "
                "(SELECT count(*) FROM lex_postings p WHERE p.scope NOT IN "
                "(SELECT id FROM lex_scopes))",
                (scope_token(scope.tenant, scope.user),),
            ).fetchone()[0]
        )
    finally:
        conn.close()


def test_a_users_purge_leaves_nothing_of_them_in_the_index(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = open_store(f"sqlite:///{path}")
    try:
        maker = Maker()
        _fill(store, maker)
        # a word only bo has: after bo's purge no statistic of the tenant may hold it
        store.insert([maker.write(text="zyzzyva", tenant=B.tenant, user=B.user)])
        ana = [(c.id, c.score) for c in store.lexical_search(A, tokenize("apple"), 10, Filters())]
        report = store.purge_user(B.tenant, B.user)
        assert report.remaining == 0
        check_statistics(store)
        assert isinstance(store, SQLiteStore)
        with store._read() as c:
            assert not c.execute("SELECT 1 FROM lex_df WHERE token = 'zyzzyva'").fetchall()
        assert _user_rows(path, B) == 0
        # ana's scores are those of a tenant that never had bo
        alone = open_store("sqlite://:memory:")
        try:
            again = Maker()
            _fill(alone, again)
            alone.insert([again.write(text="zyzzyva", tenant=B.tenant, user=B.user)])
            alone.purge_user(B.tenant, B.user)
            assert [
                (c.id, c.score) for c in store.lexical_search(A, tokenize("apple"), 10, Filters())
            ] == [
                (c.id, c.score) for c in alone.lexical_search(A, tokenize("apple"), 10, Filters())
            ]
        finally:
            alone.close()
        assert ana  # the query matches ana's records
        # the tenant's last user: nothing of the tenant is left in the index
        store.purge_user(A.tenant, A.user)
        with store._read() as c:
            keys = [r[0] for r in c.execute("SELECT key FROM lex_tenants")]
            assert keys == [lexical.tenant_key(C.tenant)]
            assert not c.execute(
                "SELECT 1 FROM lex_df WHERE tenant NOT IN (SELECT id FROM lex_tenants)"
            ).fetchall()
            assert c.execute("SELECT count(*) FROM lex_scopes").fetchone()[0] == 1
        check_statistics(store)
    finally:
        store.close()
    data = path.read_bytes()
    for scope in (A, B):
        assert scope_token(scope.tenant, scope.user).encode() not in data


def test_a_dump_and_restore_gives_bit_equal_searches(tmp_path: Path) -> None:
    source = open_store(f"sqlite:///{tmp_path / 'a.db'}")
    try:
        _fill(source, Maker())
        want = _hits(source)
    finally:
        source.close()
    report = copy_store(f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}")
    assert report.ok, report.mismatches
    target = open_store(f"sqlite:///{tmp_path / 'b.db'}")
    try:
        assert _hits(target) == want
        check_statistics(target)
    finally:
        target.close()


def test_each_tenant_has_statistics_of_its_own_under_a_hashed_key(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = open_store(f"sqlite:///{path}")
    try:
        _fill(store, Maker())
    finally:
        store.close()
    conn = sqlite3.connect(path)
    try:
        rows = dict(conn.execute("SELECT key, docs FROM lex_tenants").fetchall())
        assert rows == {lexical.tenant_key("acme"): 2 * 4 * 7, lexical.tenant_key("globex"): 4 * 7}
        index_text = " ".join(
            str(v)
            for table in ("lex_tenants", "lex_scopes", "lex_df")
            for row in conn.execute(f"SELECT * FROM {table}")
            for v in row
        )
        assert "acme" not in index_text and "globex" not in index_text
        assert "ana" not in index_text
    finally:
        conn.close()
