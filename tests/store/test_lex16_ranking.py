"""The SQLite store ranks exactly as its FTS5 tables did (one per tenant, ``bm25``).

Random multi-tenant, multi-user corpora with inserts, replaces, record purges and user
purges between searches; after each step every user's searches are compared with an FTS5
reference built the way the store indexed before schema 10: the same ids in the same
order and bit-equal scores. Terms include ones ``unicode61`` splits into phrases of several
tokens (``tea-pot``), ones it drops whole (``・``) and case-folds (``Ünder``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from dataclasses import replace as evolve
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata.filters import Filters, MetadataCondition
from memstrata.records import MemoryRecord
from memstrata.scope import Scope
from memstrata.store import RecordWrite, Store, open_store
from memstrata.store.sqlite.codec import scope_token
from memstrata.store.sqlite.lexical import terms_text
from memstrata.store.sqlite.migrations import FTS5_TOKENIZE

from .conftest import Maker
from .test_lex16_index_upkeep import check_statistics

WORDS = [
    "apple",
    "river",
    "stone",
    "apple",
    "tea",
    "harbour",
    "quiet",
    "x1",
    "tea-pot",
    "a・b",
    "・",
    "Ünder",
    "pot",
    "apple",
    "river",
]
TENANTS = ["acme", "globex"]
USERS = ["ana", "bo", "cy"]
terms_st = st.lists(st.sampled_from(WORDS), min_size=0, max_size=8)
scope_st = st.tuples(st.sampled_from(TENANTS), st.sampled_from(USERS))
op_st: st.SearchStrategy[tuple[str, Any, list[str]]] = st.one_of(
    st.tuples(st.just("insert"), scope_st, terms_st),
    st.tuples(st.just("replace"), st.integers(0, 60), terms_st),
    st.tuples(st.just("purge"), st.integers(0, 60), st.just([])),
    st.tuples(st.just("purge_user"), scope_st, st.just([])),
)


def quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def match_expression(scope_tok: str, terms: Sequence[str]) -> str | None:
    """The MATCH expression the store built before schema 10."""
    unique = list(dict.fromkeys(t for t in terms if t and not t.isspace()))
    if not unique:
        return None
    body = " OR ".join(quote(t) for t in unique)
    return f"scope_tok : {quote(scope_tok)} AND terms : ({body})"


@dataclass
class Reference:
    """FTS5 tables per tenant, rowid the insertion order (as the store's seq)."""

    conn: sqlite3.Connection = field(default_factory=lambda: sqlite3.connect(":memory:"))
    rows: dict[int, tuple[str, str, str]] = field(default_factory=dict)  # rowid -> t, u, id
    n: int = 0

    def table(self, tenant: str) -> str:
        name = f"ref_{TENANTS.index(tenant)}"
        self.conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5 "
            f"(scope_tok, terms, {FTS5_TOKENIZE})"
        )
        return name

    def insert(self, tenant: str, user: str, rid: str, terms: Sequence[str]) -> int:
        self.n += 1
        self.conn.execute(
            f"INSERT INTO {self.table(tenant)} (rowid, scope_tok, terms) VALUES (?, ?, ?)",
            (self.n, scope_token(tenant, user), terms_text(terms)),
        )
        self.rows[self.n] = (tenant, user, rid)
        return self.n

    def replace(self, rowid: int, terms: Sequence[str]) -> None:
        tenant, user, _ = self.rows[rowid]
        name = self.table(tenant)
        self.conn.execute(f"DELETE FROM {name} WHERE rowid = ?", (rowid,))
        self.conn.execute(
            f"INSERT INTO {name} (rowid, scope_tok, terms) VALUES (?, ?, ?)",
            (rowid, scope_token(tenant, user), terms_text(terms)),
        )

    def delete(self, rowid: int) -> None:
        tenant, _, _ = self.rows.pop(rowid)
        self.conn.execute(f"DELETE FROM {self.table(tenant)} WHERE rowid = ?", (rowid,))

    def search(
        self, tenant: str, user: str, terms: Sequence[str], k: int
    ) -> list[tuple[str, float]]:
        expr = match_expression(scope_token(tenant, user), terms)
        if expr is None:
            return []
        t = self.table(tenant)
        hits = self.conn.execute(
            f"SELECT rowid, -bm25({t}, 0.0, 1.0) FROM {t} WHERE {t} MATCH ? "
            f"ORDER BY bm25({t}, 0.0, 1.0), rowid LIMIT ?",
            (expr, k),
        ).fetchall()
        return [(self.rows[int(r)][2], float(s)) for r, s in hits]


# A metadata filter runs in Python on the decoded records (the store's other path).
ODD = Filters(metadata=(MetadataCondition("odd", "eq", True),))


def _search_all(
    store: Store, ref: Reference, queries: list[list[str]], k: int
) -> list[tuple[str, str, list[str]]]:
    checked = []
    for tenant in TENANTS:
        for user in USERS:
            for q in queries:
                got = [
                    (c.id, c.score)
                    for c in store.lexical_search(Scope(tenant, user), q, k, Filters())
                ]
                want = ref.search(tenant, user, q, k)
                assert got == want, (tenant, user, q)
                odd = [
                    (c.id, c.score) for c in store.lexical_search(Scope(tenant, user), q, k, ODD)
                ]
                every = ref.search(tenant, user, q, 10_000)
                assert odd == [h for h in every if int(h[0][1:]) % 2][:k], (tenant, user, q)
                checked.append((tenant, user, q))
    return checked


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(op_st, min_size=1, max_size=40),
    queries=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6), min_size=1),
    k=st.sampled_from([1, 3, 50]),
)
def test_scores_ids_and_order_equal_fts5(
    ops: list[tuple[str, Any, list[str]]], queries: list[list[str]], k: int
) -> None:
    store = open_store("sqlite://:memory:")
    ref = Reference()
    maker = Maker()
    live: list[tuple[int, MemoryRecord]] = []  # (reference rowid, current record)
    try:
        for step, (kind, arg, terms) in enumerate(ops):
            if kind == "insert":
                tenant, user = arg
                rec = maker.record(tenant=tenant, user=user)
                rec = evolve(rec, metadata={"odd": maker.n % 2 == 1})
                store.insert([RecordWrite(rec, None, tuple(terms))])
                live.append((ref.insert(tenant, user, rec.id, terms), rec))
            elif live and kind == "replace":
                i = int(arg) % len(live)
                rowid, rec = live[i]
                new = evolve(rec, version=rec.version + 1)
                store.replace(
                    Scope(rec.tenant, rec.user),
                    RecordWrite(new, None, tuple(terms)),
                    expected_version=rec.version,
                )
                ref.replace(rowid, terms)
                live[i] = (rowid, new)
            elif live and kind == "purge":
                rowid, rec = live.pop(int(arg) % len(live))
                store.purge(Scope(rec.tenant, rec.user), [rec.id])
                ref.delete(rowid)
            elif kind == "purge_user":
                tenant, user = arg
                store.purge_user(tenant, user)
                for rowid, rec in [x for x in live if (x[1].tenant, x[1].user) == arg]:
                    live.remove((rowid, rec))
                    ref.delete(rowid)
            if step % 7 == 0:
                _search_all(store, ref, queries, k)
        assert _search_all(store, ref, queries, k)
        check_statistics(store)
    finally:
        store.close()
