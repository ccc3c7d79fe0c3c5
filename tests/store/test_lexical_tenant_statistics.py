"""A tenant's lexical scores are its own: what other tenants store never moves them.

BM25 scores a match with statistics of the indexed rows (how many, their mean length, how
many hold the term). Counted over every tenant of a store, they let one tenant's words
change another's scores and the order of its hits, and a tenant could learn whether a word
is common in other tenants' records by searching its own. Each backend keeps them per
tenant (SQLite: ``lex_tenants``/``lex_df`` keyed by a hash of the tenant; PostgreSQL:
``lex_df``/``lex_stats`` keyed by tenant; the in-memory store: one index per user), and
stores written before keep their hits across the upgrade (SQLite files of schema 8 and 9:
``test_lex16_index_upkeep.py``).
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

import servers
from memstrata.filters import Filters
from memstrata.scope import Scope
from memstrata.search.tokenize import tokenize
from memstrata.store import Store, open_store
from memstrata.store.sqlite import lexical
from memstrata.store.sqlite.migrations import FTS5_TOKENIZE

from .conftest import STORE_KINDS, Maker, make_store

A = Scope("acme", "ana")
B = Scope("globex", "bo")
QUERIES = ["apple", "apple river", "river stone", "quiet harbour apple"]
MINE = [
    "apple pie at the river",
    "a stone by the river",
    "the quiet harbour",
    "apple apple orchard in spring",
    "nothing to see here",
]
THEIRS = [f"apple note {i} with river words and more apple" for i in range(40)]


def _scores(store: Store, scope: Scope) -> list[list[tuple[str, float]]]:
    return [
        [(c.id, c.score) for c in store.lexical_search(scope, tokenize(q), 10, Filters())]
        for q in QUERIES
    ]


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_another_tenants_records_do_not_move_my_scores(kind: str, tmp_path: Path) -> None:
    store = make_store(kind, tmp_path)
    maker = Maker()
    try:
        store.insert(
            [maker.write(text=t, tenant=A.tenant, user=A.user, vector=False) for t in MINE]
        )
        before = _scores(store, A)
        assert all(before[:2])  # the queries match
        store.insert(
            [maker.write(text=t, tenant=B.tenant, user=B.user, vector=False) for t in THEIRS]
        )
        assert _scores(store, A) == before  # bit-equal scores, same order
        assert _scores(store, B)[0]  # the other tenant finds its own
        store.purge_user(B.tenant, B.user)
        assert _scores(store, A) == before
    finally:
        store.close()
        if kind.startswith("postgresql"):
            servers.postgres().drop(store.options.schema)  # type: ignore[attr-defined]


def test_sqlite_keeps_each_tenants_statistics_under_a_hashed_key(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'm.db'}")
    maker = Maker()
    try:
        assert not store.lexical_search(A, tokenize("apple"), 5, Filters())  # nothing yet
        store.insert([maker.write(text="apple", tenant=A.tenant, user=A.user)])
        store.insert([maker.write(text="apple", tenant=B.tenant, user=B.user)])
    finally:
        store.close()
    conn = sqlite3.connect(tmp_path / "m.db")
    try:
        rows = dict(conn.execute("SELECT key, docs FROM lex_tenants").fetchall())
        assert rows == {lexical.tenant_key(A.tenant): 1, lexical.tenant_key(B.tenant): 1}
        for key in rows:  # the tenant's name is hashed: no raw id in the index
            assert A.tenant not in key and B.tenant not in key
    finally:
        conn.close()


def _fill(store: Store, maker: Maker) -> None:
    store.insert([maker.write(text=t, tenant=A.tenant, user=A.user) for t in MINE])
    store.insert([maker.write(text=t, tenant=B.tenant, user=B.user) for t in THEIRS[:10]])
    store.insert([maker.write(text="apple in the second user", tenant=A.tenant, user="cy")])


def test_a_sqlite_file_of_one_shared_table_upgrades_with_its_hits(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = open_store(f"sqlite:///{path}")
    try:
        _fill(store, Maker())
        want = (_scores(store, A), _scores(store, B), _scores(store, Scope(A.tenant, "cy")))
    finally:
        store.close()
    # The file as schema 8 had it: one FTS5 table holding every tenant's rows.
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(f"CREATE VIRTUAL TABLE lexical USING fts5 (scope_tok, terms, {FTS5_TOKENIZE})")
        conn.execute(
            "INSERT INTO lexical (rowid, scope_tok, terms) SELECT d.seq, s.scope_tok, d.terms "
            "FROM lex_docs d JOIN lex_scopes s ON s.id = d.scope ORDER BY d.seq"
        )
        for table in ("lex_tenants", "lex_scopes", "lex_postings", "lex_df", "lex_docs"):
            conn.execute(f"DROP TABLE {table}")
        conn.execute("PRAGMA user_version = 8")
    finally:
        conn.close()
    store = open_store(f"sqlite:///{path}")
    try:
        got = (_scores(store, A), _scores(store, B), _scores(store, Scope(A.tenant, "cy")))
        assert got == want
    finally:
        store.close()
    conn = sqlite3.connect(path)
    try:
        assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'lexical'").fetchone()
    finally:
        conn.close()


def _statistics(url: str) -> tuple[set[tuple[str, int, int]], set[tuple[str, str, int]]]:
    """``lex_stats`` and ``lex_df`` summed over slots (zero rows left out)."""
    schema = url.rsplit("schema=", 1)[1].split("&")[0]
    with psycopg.connect(servers.postgres().admin_url) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        stats = conn.execute(
            "SELECT tenant, sum(docs)::int, sum(tokens)::int FROM lex_stats GROUP BY tenant "
            "HAVING sum(docs) <> 0 OR sum(tokens) <> 0"
        ).fetchall()
        df = conn.execute(
            "SELECT tenant, token, sum(df)::int FROM lex_df GROUP BY tenant, token "
            "HAVING sum(df) <> 0"
        ).fetchall()
    return {tuple(r) for r in stats}, {tuple(r) for r in df}  # type: ignore[misc]


def _recount(url: str) -> tuple[set[tuple[str, int, int]], set[tuple[str, str, int]]]:
    """What the statistics must be: counted again from the records and the postings."""
    schema = url.rsplit("schema=", 1)[1].split("&")[0]
    with psycopg.connect(servers.postgres().admin_url) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        stats = conn.execute(
            "SELECT tenant, count(*)::int, sum(lex_len)::int FROM records GROUP BY tenant"
        ).fetchall()
        df = conn.execute(
            "SELECT r.tenant, p.token, count(*)::int FROM lex_postings p "
            "JOIN records r ON r.seq = p.seq GROUP BY r.tenant, p.token"
        ).fetchall()
    return {tuple(r) for r in stats}, {tuple(r) for r in df}  # type: ignore[misc]


def test_postgres_statistics_stay_each_tenants_count_through_every_write() -> None:
    server = servers.postgres()
    url = server.url()
    store = open_store(url)
    maker = Maker()
    try:
        _fill(store, maker)
        assert _statistics(url) == _recount(url)
        first = store.list(A, Filters(), limit=2)
        v2 = replace(first[0], version=2, content=replace(first[0].content, raw="harbour apple"))
        store.replace(A, maker.write(v2), expected_version=1)
        store.purge(A, [first[1].id], reterm={first[0].id: tokenize("river harbour")})
        store.purge_user(B.tenant, B.user)
        assert _statistics(url) == _recount(url)
        assert not any(t == B.tenant for t, *_ in _statistics(url)[1])  # nothing of B left
    finally:
        store.close()
        server.drop(url.rsplit("schema=", 1)[1].split("&")[0])


def test_a_postgres_schema_of_shared_statistics_upgrades_with_its_hits() -> None:
    server = servers.postgres()
    url = server.url()
    schema = url.rsplit("schema=", 1)[1].split("&")[0]
    store = open_store(url)
    try:
        _fill(store, Maker())
        want = (_scores(store, A), _scores(store, B))
    finally:
        store.close()
    # The schema as version 8 had it: statistics over every tenant.
    with psycopg.connect(server.admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        conn.execute(
            "CREATE TABLE old_df AS SELECT token, 0::smallint AS slot, sum(df)::bigint AS df "
            "FROM lex_df GROUP BY token"
        )
        conn.execute(
            "CREATE TABLE old_stats AS SELECT 0::smallint AS slot, sum(docs)::bigint AS docs, "
            "sum(tokens)::bigint AS tokens FROM lex_stats"
        )
        conn.execute("DROP TABLE lex_df")
        conn.execute("DROP TABLE lex_stats")
        conn.execute("ALTER TABLE old_df RENAME TO lex_df")
        conn.execute("ALTER TABLE old_stats RENAME TO lex_stats")
        conn.execute("DELETE FROM schema_migrations WHERE version >= 9")
    store = open_store(url)
    try:
        assert (_scores(store, A), _scores(store, B)) == want
        assert _statistics(url) == _recount(url)
    finally:
        store.close()
        server.drop(schema)
