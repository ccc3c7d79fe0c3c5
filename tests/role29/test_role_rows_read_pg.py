"""PostgreSQL: a caller with roles read the owner's role-shared records through the partial
index of step 22, which holds the owner's public records too: each was read (its row, to
drop it) on every search, so that caller's search grew with the owner's public records
(7-15 ms at 10k public notes, 1.2-1.7 at 10k private). Step 25's index holds the
role-shared records only. Counted, not timed: the rows of ``records`` the role statement
reads (EXPLAIN ANALYZE: rows returned and removed by a filter, every scan of ``records``) at
100 and 1,000 public notes; they grew before (fails before), equal now. Private notes were
never read (a check)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from psycopg.rows import dict_row

from memstrata import Memory, Scope
from memstrata.records import RecordType
from memstrata.store.postgres import lexical
from memstrata.store.postgres.where import scope_sql

BOB = Scope("acme", "bob")
EDITOR = BOB.as_caller("erin", {"editor"})


def _records_read(plan: dict[str, Any]) -> int:
    n = 0
    if plan.get("Relation Name") == "records":
        loops = int(plan.get("Actual Loops", 1))
        n += (int(plan.get("Actual Rows", 0)) + int(plan.get("Rows Removed by Filter", 0))) * loops
    for sub in plan.get("Plans", ()):
        n += _records_read(sub)
    return n


def _read(mem: Memory) -> int:
    store: Any = getattr(mem.store, "viewed", mem.store)
    readable = scope_sql(EDITOR.user_scope, "r.")
    fill = {"message": RecordType.MESSAGE.value, "where": "TRUE", "readable": readable[0]}
    sql = lexical._ROLED.format(**fill)
    with store._pool.connection() as conn:
        conn.row_factory = dict_row
        conn.execute("ANALYZE records")
        row = conn.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + sql,
            [EDITOR.tenant, EDITOR.user, EDITOR.caller, *readable[1]],
        ).fetchone()
    plan = row["QUERY PLAN"]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return _records_read(plan[0]["Plan"])


@pytest.mark.parametrize("kind", ["public", "private"])
def test_a_role_callers_search_does_not_read_the_owners_public_records(
    pg_url: str, kind: str
) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        shared = set()
        for i in range(5):
            rid = mem.add(BOB, f"harbour ferry note {i}").id
            mem.set_access(BOB, rid, visibility="shared", allowed_roles=["editor"])
            shared.add(rid)
        counted = []
        added = 0
        for total in (100, 1000):
            recs = [f"harbour filler {i}" for i in range(added, total)]
            for text in recs:
                rid = mem.add(BOB, text).id
                if kind == "public":
                    mem.set_access(BOB, rid, visibility="public")
            added = total
            found = {h.record.id for h in mem.search(EDITOR, "ferry", mode="lexical")}
            assert found == shared
            counted.append(_read(mem))
        assert counted[0] == counted[1] == 5, counted
