"""A caller's ``list`` walked the owner's rows in order until its page was full: its cost,
and its time (10-16 ms on SQLite, 24 on PostgreSQL for 100 of 10k notes mostly private),
grew with the records the owner did not share. It now reads what the caller may read
through the index of readers, the role rows and the public rows (SQLite), through
``record_readers``, ``records_shared_roles`` and step 26's ``records_public_observed``
(PostgreSQL).

Counted, not timed: SQLite's virtual-machine steps of the caller's store reads (a progress
handler on the store's read connection), and PostgreSQL's rows read by the caller's list
statement (EXPLAIN ANALYZE: rows returned and removed by a filter, every scan node, times
its loops), at 100 and 1,000 private notes of the owner beside the same shared ones: they
grew with the private notes before (fails before), they are equal now."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from psycopg.rows import dict_row

from memstrata import Memory, Scope
from memstrata.filters import Filters
from memstrata.store.postgres import store as pg_store
from memstrata.store.types import ListQuery
from sqlite_steps import sqlite_store, vm_steps

BOB = Scope("acme", "bob")
CAROL = BOB.as_caller("carol")
EDITOR = BOB.as_caller("erin", {"editor"})
NOTES = Filters.parse({"types": ["note"]})
TAGGED = Filters.parse({"metadata": {"k": "a"}})
ASKS: dict[str, tuple[Scope, Filters, int, bool]] = {
    "named and public, newest first": (CAROL, Filters(), 0, True),
    "a role, oldest first, a page further": (EDITOR, Filters(), 3, False),
    "by type": (CAROL, NOTES, 0, True),
    "by metadata (Python)": (EDITOR, TAGGED, 1, True),
}


def _fill(mem: Memory, shared: bool, start: int, stop: int) -> list[str]:
    ids = []
    for i in range(start, stop):
        rid = mem.add(BOB, f"harbour note {i}", metadata={"k": "a"}, dedup=False).id
        ids.append(rid)
        if shared:
            how = i % 3
            if how == 0:
                mem.set_access(BOB, rid, visibility="public")
            elif how == 1:
                mem.set_access(BOB, rid, visibility="shared", allowed_users=["carol"])
            else:
                mem.set_access(BOB, rid, visibility="shared", allowed_roles=["editor"])
    return ids


def _grown(mem: Memory, count: Callable[[], list[int]]) -> list[list[int]]:
    """``count()`` beside 9 shared notes at 100 and 1,000 private notes of the owner."""
    _fill(mem, True, 0, 9)
    out = []
    added = 9
    for total in (100, 1000):
        _fill(mem, False, added, total)
        added = total
        out.append(count())
    return out


@pytest.fixture
def lite(tmp_path: Path) -> Iterator[Memory]:
    m = Memory(f"sqlite:///{tmp_path / 'c.db'}", embedder="hashing", background=False)
    yield m
    m.close()


def test_a_callers_sqlite_reads_do_not_grow_with_the_owner(lite: Memory) -> None:
    store = sqlite_store(lite)

    def count() -> list[int]:
        steps = []
        for scope, f, offset, newest in ASKS.values():
            got = store.list(scope, f, limit=100, offset=offset, newest_first=newest)
            assert len(got) == 6 - offset  # 3 public and 3 named, or 3 with the role
            first = got[-1].id
            for read in (
                partial(store.list, scope, f, offset=offset, newest_first=newest),
                partial(store.count, scope, f),
                partial(store.list_after, scope, f, first, limit=5),
                partial(lambda *a, **k: list(store.list_pages(*a, **k)), scope, f, batch_size=4),
            ):
                steps.append(vm_steps(store, read))
        return steps

    small, large = _grown(lite, count)
    assert small == large, (small, large)


def _rows_read(plan: dict[str, Any]) -> int:
    n = 0
    if "Relation Name" in plan:
        loops = int(plan.get("Actual Loops", 1))
        n += (int(plan.get("Actual Rows", 0)) + int(plan.get("Rows Removed by Filter", 0))) * loops
    for sub in plan.get("Plans", ()):
        n += _rows_read(sub)
    return n


def test_a_callers_postgres_list_does_not_grow_with_the_owner(pg_url: str) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        store: Any = getattr(mem.store, "viewed", mem.store)

        def count() -> list[int]:
            read = []
            with store._pool.connection() as conn:
                conn.row_factory = dict_row
                conn.execute("ANALYZE records")
                for scope, f, offset, newest in ASKS.values():
                    got = store.list(scope, f, limit=100, offset=offset, newest_first=newest)
                    assert len(got) == 6 - offset
                    sql, args = pg_store._list_sql(ListQuery(scope, f, 100, offset, newest))
                    row = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, args).fetchone()
                    plan = row["QUERY PLAN"]
                    plan = json.loads(plan) if isinstance(plan, str) else plan
                    read.append(_rows_read(plan[0]["Plan"]))
            return read

        small, large = _grown(mem, count)
        assert small == large, (small, large)
