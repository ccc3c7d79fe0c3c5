"""PostgreSQL step 26 (caller30): the index a caller's ``list`` walks the owner's public
records by (``records_public_observed``) is made, and step 22's ``records_shared_wide``
(read by no statement but ``lexical.index_public``'s look-up by ``seq``, which the primary
key serves as well) is dropped, on a new store and on a store of step 25; a caller's list
reads the same records before and after."""

from __future__ import annotations

from typing import Any

from memstrata import Memory, Scope

BOB = Scope("acme", "bob")
CAROL = BOB.as_caller("carol")
WIDE = (
    'CREATE INDEX records_shared_wide ON records (tenant, "user", seq) '
    "WHERE visibility = 'public' OR strpos(access, '\"allowed_roles\":[]') = 0"
)


def _indexes(mem: Memory) -> set[str]:
    store: Any = getattr(mem.store, "viewed", mem.store)
    with store._pool.connection() as conn:
        return {
            str(row[0] if not isinstance(row, dict) else row["indexname"])
            for row in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
                "AND tablename = 'records'"
            ).fetchall()
        }


def test_step_26_on_a_new_store_and_on_one_of_step_25(pg_url: str) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        for i in range(30):
            mem.add(BOB, f"note {i}", visibility="public" if i % 3 else None, dedup=False)
        listed = [r.id for r in mem.list(CAROL, limit=7, offset=2)]
        assert len(listed) == 7
        found = _indexes(mem)
        assert "records_public_observed" in found and "records_shared_wide" not in found
        store: Any = getattr(mem.store, "viewed", mem.store)
        with store._pool.connection() as conn:  # the store as step 25 left it
            conn.execute("DROP INDEX records_public_observed")
            conn.execute(WIDE)
            conn.execute("DELETE FROM schema_migrations WHERE version >= 26")
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        found = _indexes(mem)
        assert "records_public_observed" in found and "records_shared_wide" not in found
        assert [r.id for r in mem.list(CAROL, limit=7, offset=2)] == listed
