"""The faster read paths return exactly what the plain queries they replace return.

- SQLite lexical search ranks the index alone and reads only the best rows' records
  (``lexical.ranked``); the reference is the one join of the index with ``records`` ordered
  by ``bm25, seq`` that it replaced. Many deleted, superseded, other-session and other-type
  rows sit among the best matches, so the over-fetch must grow and ask again.
- PostgreSQL lexical search computes the statistics and idf in its one statement; it must
  equal the SQLite store bit for bit (ids, order, scores).
- Dense search with a type filter (integer type codes in the vector cache) returns the ids
  a brute-force scan over the live records returns, in the same order, on both stores.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memstrata.filters import Filters
from memstrata.records import MemoryRecord, RecordStatus, RecordType, Visibility
from memstrata.scope import Scope
from memstrata.search.tokenize import tokenize
from memstrata.store import RecordWrite, Store
from memstrata.store.sqlite.codec import scope_token
from memstrata.store.sqlite.lexical import tenant_key
from memstrata.store.sqlite.migrations import FTS5_TOKENIZE
from memstrata.store.sqlite.vectors import dot
from memstrata.store.sqlite.where import filters_sql, needs_python, scope_sql
from store.conftest import DIMS, T0, Maker, make_store, unit

# A small vocabulary: common words have long posting lists, as in a real user's history.
COMMON = "tea coffee river stone apple paris work dog".split()
RARE = "guitar lisbon painting 北京 喝茶 café naïve runs 2024".split()
TYPES = (RecordType.MESSAGE, RecordType.NOTE, RecordType.FACT, RecordType.CLUSTER)
ME = Scope("t1", "u1")
OTHERS = (Scope("t1", "u2"), Scope("t2", "u1"))
FILTERS = (
    Filters(),
    Filters(include_deleted=True, include_superseded=True),
    Filters(types=frozenset({RecordType.MESSAGE})),
    Filters(types=frozenset({RecordType.FACT, RecordType.CLUSTER})),
    Filters(types=frozenset({RecordType.NOTE}), min_importance=0.5),
)
SCOPES = (ME, ME.with_session("s1"), ME.with_agent("a1"), ME.with_agent("a2"))


def _text(rng: random.Random) -> str:
    words = [rng.choice(COMMON) for _ in range(rng.randint(1, 6))]
    if rng.random() < 0.3:
        words.append(rng.choice(RARE))
    return " ".join(words)


def _fill(store: Store, seed: int) -> dict[tuple[str, str, str], tuple[MemoryRecord, Any]]:
    """The same records (and deletions) in any store; returns the live state by key."""
    rng = random.Random(seed)
    maker = Maker(rng=np.random.default_rng(seed))
    state: dict[tuple[str, str, str], tuple[MemoryRecord, Any]] = {}
    for scope, n in ((ME, 420), *((o, 60) for o in OTHERS)):
        writes = []
        for _ in range(n):
            r = maker.record(
                _text(rng),
                tenant=scope.tenant,
                user=scope.user,
                type=rng.choice(TYPES),
                session=rng.choice(["s1", "s2", None]),
                agent=rng.choice(["a1", "a2", None]),
                visibility=rng.choice([Visibility.PRIVATE, Visibility.SHARED]),
                importance=rng.random(),
                observed_at=T0 + timedelta(minutes=rng.randint(0, 500)),
            )
            writes.append(RecordWrite(r, unit(maker.rng, DIMS), tuple(tokenize(r.text))))
        for i in range(0, len(writes), 100):
            store.insert(writes[i : i + 100])
        for w in writes:
            state[(w.record.tenant, w.record.user, w.record.id)] = (w.record, w.vector)
    mine = [k for k in state if k[:2] == ("t1", "u1")]
    # Most of the user's records with the common words deleted: the best lexical matches
    # are mostly rows the default filters drop.
    gone = [k for k in mine if rng.random() < 0.7]
    store.set_status(ME, [k[2] for k in gone], RecordStatus.DELETED, T0 + timedelta(days=1))
    for k in gone:
        rec, vec = state[k]
        state[k] = (replace(rec, status=RecordStatus.DELETED), vec)
    # A few superseded ones (a new version pointing at its successor).
    for k in rng.sample([k for k in mine if k not in gone], 10):
        rec, vec = state[k]
        new = replace(
            rec,
            superseded_by="r9999",
            version=rec.version + 1,
            updated_at=rec.updated_at + timedelta(days=2),
        )
        store.replace(
            ME, RecordWrite(new, None, tuple(tokenize(new.text))), expected_version=rec.version
        )
        state[k] = (new, vec)
    return state


def _queries(seed: int) -> list[list[str]]:
    rng = random.Random(seed * 101)
    out = [tokenize(_text(rng)) for _ in range(25)]
    out += [tokenize(w) for w in COMMON + RARE]
    return [q for q in out if q]


def _match_expression(scope_tok: str, terms: list[str]) -> str | None:
    unique = list(dict.fromkeys(t for t in terms if t and not t.isspace()))
    if not unique:
        return None
    body = " OR ".join('"' + t.replace('"', '""') + '"' for t in unique)
    return f'scope_tok : "{scope_tok}" AND terms : ({body})'


def _reference_lexical(
    path: Path, scope: Scope, terms: list[str], k: int, filters: Filters
) -> list[tuple[str, float]]:
    """The statement the SQLite store ran before schema 10: one join of the tenant's FTS5
    table (rebuilt here from what the index holds) with ``records``, by ``bm25, seq``."""
    expr = _match_expression(scope_token(scope.tenant, scope.user), terms)
    assert expr is not None and not needs_python(filters)
    sw, sa = scope_sql(scope, "r.")
    fw, fa = filters_sql(filters, "r.")
    conn = sqlite3.connect(path)
    try:
        conn.execute(f"CREATE VIRTUAL TABLE temp.t USING fts5 (scope_tok, terms, {FTS5_TOKENIZE})")
        conn.execute(
            "INSERT INTO temp.t (rowid, scope_tok, terms) SELECT d.seq, s.scope_tok, d.terms "
            "FROM lex_docs d JOIN lex_scopes s ON s.id = d.scope JOIN lex_tenants n "
            "ON n.id = s.tenant WHERE n.key = ?",
            (tenant_key(scope.tenant),),
        )
        rows = conn.execute(
            f"SELECT r.id, -bm25(t, 0.0, 1.0) FROM temp.t AS t JOIN records r ON "
            f"r.seq = t.rowid WHERE t MATCH ? AND {sw} AND {fw} "
            f"ORDER BY bm25(t, 0.0, 1.0), r.seq LIMIT ?",
            [expr, *sa, *fa, k],
        ).fetchall()
    finally:
        conn.close()
    return [(str(i), float(s)) for i, s in rows]


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, Path]]:
    directory = tmp_path_factory.mktemp("same-sqlite")
    store = make_store("sqlite-file", directory)
    _fill(store, 5)
    yield store, directory / "mem.db"
    store.close()


def test_sqlite_lexical_equals_the_single_join(sqlite_store: tuple[Store, Path]) -> None:
    store, path = sqlite_store
    compared = grew = 0
    for terms in _queries(5):
        for scope in SCOPES:
            for flt in FILTERS:
                for k in (1, 5, 10, 80):
                    want = _reference_lexical(path, scope, terms, k, flt)
                    got = [(c.id, c.score) for c in store.lexical_search(scope, terms, k, flt)]
                    assert got == want, (terms, scope, flt, k)
                    compared += 1
                    grew += len(want) == k and k >= 10
    assert compared > 1000 and grew > 50  # full answers, not only empty ones


def test_lexical_search_of_an_unknown_word_is_empty(sqlite_store: tuple[Store, Path]) -> None:
    store, _ = sqlite_store
    assert store.lexical_search(ME, ["zzzunknown"], 10, Filters()) == []


def _brute_dense(
    state: dict[tuple[str, str, str], tuple[MemoryRecord, Any]],
    scope: Scope,
    query: Any,
    k: int,
    flt: Filters,
) -> list[str]:
    rows = [
        (rec, vec)
        for rec, vec in state.values()
        if scope.admits(rec.tenant, rec.user, rec.agent, rec.session, rec.access.visibility.value)
        and flt.matches(rec)
    ]
    if not rows:
        return []
    scores = dot(np.stack([v for _, v in rows]).astype(np.float32), query)
    # Insertion order breaks ties: the records' ids were made in order (r0001, r0002 ...).
    order = sorted(range(len(rows)), key=lambda i: (-float(scores[i]), rows[i][0].id))
    return [rows[i][0].id for i in order[:k]]


@pytest.mark.parametrize("kind", ["sqlite-file", "postgresql"])
def test_dense_with_type_filters_equals_brute_force(kind: str, tmp_path: Path) -> None:
    store = make_store(kind, tmp_path)
    try:
        state = _fill(store, 9)
        probe = np.random.default_rng(4)
        for _ in range(8):
            query = unit(probe, DIMS)
            for scope in SCOPES:
                for flt in FILTERS:
                    got = [c.id for c in store.vector_search(scope, query, 10, flt)]
                    assert got == _brute_dense(state, scope, query, 10, flt), (scope, flt)
    finally:
        store.close()


def test_postgres_lexical_equals_sqlite_bit_for_bit(
    sqlite_store: tuple[Store, Path], tmp_path: Path
) -> None:
    reference, _ = sqlite_store
    pg = make_store("postgresql", tmp_path)
    try:
        _fill(pg, 5)
        for terms in _queries(5):
            for scope in SCOPES:
                for flt in FILTERS:
                    want = [
                        (c.id, c.score) for c in reference.lexical_search(scope, terms, 10, flt)
                    ]
                    got = [(c.id, c.score) for c in pg.lexical_search(scope, terms, 10, flt)]
                    assert got == want, (terms, scope, flt)
    finally:
        pg.close()
