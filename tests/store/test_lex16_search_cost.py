"""A user's lexical search reads that user's postings only: its cost does not grow with
what the tenant's other users store (the project's rule, "nothing per message may grow
with the size of the history").

Measured without a clock: the bytes a fresh read connection reads from the file for one
search (``rchar`` of ``/proc/self/io``: every page SQLite reads is one ``pread``; the page
cache starts cold in a store opened for the measurement). With FTS5 tables per tenant
(before schema 10) the search walked the doclists of every user of the tenant: with 40
other users of 300 records each, a search that read 30 pages read 80 (32 and 30 after).
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

from memstrata.filters import Filters
from memstrata.scope import Scope
from memstrata.store import RecordWrite, Store, open_store
from memstrata.store.sqlite import lexical

from .conftest import Maker

VOCAB = [f"w{i}" for i in range(12)]
QUERY = VOCAB[:6]
ME = Scope("acme", "me")
PAGE = 4096

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/io").exists(), reason="needs Linux's /proc/self/io"
)


def _rchar() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def _fill(store: Store, maker: Maker, user: str, n: int, rng: random.Random) -> None:
    store.insert(
        [
            RecordWrite(
                maker.record(tenant=ME.tenant, user=user),
                None,
                tuple(rng.choice(VOCAB) for _ in range(6)),
            )
            for _ in range(n)
        ]
    )


def _bytes_read(path: Path) -> tuple[int, list[str]]:
    store = open_store(f"sqlite:///{path}")
    try:
        # Opens the read connection and reads the schema; matches nothing.
        assert not store.lexical_search(ME, ["nothing"], 10, Filters())
        before = _rchar()
        hits = store.lexical_search(ME, QUERY, 10, Filters())
        return _rchar() - before, [c.id for c in hits]
    finally:
        store.close()


def test_a_search_reads_no_more_when_other_users_of_the_tenant_grow(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    rng, maker = random.Random(1), Maker()
    store = open_store(f"sqlite:///{path}")
    try:
        _fill(store, maker, ME.user, 300, rng)
    finally:
        store.close()
    alone, hits = _bytes_read(path)
    assert len(hits) == 10 and alone > 0
    store = open_store(f"sqlite:///{path}")
    try:
        for u in range(40):
            _fill(store, maker, f"other{u}", 300, rng)
    finally:
        store.close()
    crowded, hits_after = _bytes_read(path)
    # The other users' records share the tenant's statistics, so the scores may move;
    # what must not grow is what the search reads (a b-tree one level deeper: a page or
    # two per probe).
    assert len(hits_after) == 10
    assert crowded - alone <= 8 * PAGE, (alone, crowded)


def test_the_scoring_statement_searches_the_postings_by_user(tmp_path: Path) -> None:
    """The plan behind the figure above: the postings are searched by (scope, token)."""
    path = tmp_path / "m.db"
    store = open_store(f"sqlite:///{path}")
    try:
        _fill(store, Maker(), ME.user, 20, random.Random(2))
    finally:
        store.close()
    conn = sqlite3.connect(path)
    plans: list[str] = []

    class Explaining:
        """The connection as ``lexical.scored`` sees it, explaining each statement."""

        def execute(self, sql: str, args: Sequence[object] = ()) -> sqlite3.Cursor:
            plans.extend(str(r[3]) for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}", args))
            return conn.execute(sql, args)

    try:
        hits = lexical.scored(Explaining(), ME.tenant, ME.user, QUERY, 10)  # type: ignore[arg-type]
    finally:
        conn.close()
    assert len(hits) == 10
    assert "SEARCH p USING PRIMARY KEY (scope=? AND token=?)" in plans, plans
    assert not any(p.startswith("SCAN") and "lex_" in p for p in plans), plans
