"""PostgreSQL: a user's records by text (``find_by_hash``: every add's exact-duplicate
check) read only that user's rows, however many other users hold the same text.

Before schema 14 the only index on the text's hash was the hash alone, and the planner
walked the primary key instead: with 100,000 other users holding "ok thanks", one user's
check read all their rows (24–31 ms instead of 0.2, docs/measurements.md, session 20).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from memstrata import Memory, Scope
from memstrata.store.base import RecordWrite
from memstrata.store.postgres.schema import SCHEMA_VERSION

ME = Scope("acme", "me", session="s")
OTHERS = 3000


class _Recording:
    """A connection that keeps the statements sent through it."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self.sent: list[tuple[Any, Any]] = []

    def execute(self, sql: Any, args: Any = None, **kw: Any) -> Any:
        self.sent.append((sql, args))
        return self._conn.execute(sql, args, **kw)


def _removed(plan: dict[str, Any]) -> int:
    """Rows every node of an ``EXPLAIN (ANALYZE, FORMAT JSON)`` plan read and threw away."""
    own = int(plan.get("Rows Removed by Filter", 0)) + int(
        plan.get("Rows Removed by Index Recheck", 0)
    )
    return own + sum(_removed(p) for p in plan.get("Plans", ()))


def test_a_text_many_users_hold_is_checked_by_one_index_step(pg_url: str) -> None:
    mem = Memory(pg_url, embedder="hashing", background=False)
    try:
        common = mem.add(Scope("acme", "someone", session="s"), "ok thanks")
        mem.store.insert(
            [
                RecordWrite(replace(common, id=f"copy-{i}", user=f"user-{i}"), None, ())
                for i in range(OTHERS)
            ]
        )
        for i in range(50):
            mem.add(ME, f"a note of my own, number {i}")
        store: Any = mem.store
        with store._read() as c:
            c.execute("ANALYZE records")
            recording = _Recording(c)
            assert store._find_by_hash(recording, ME.user_scope, common.content_hash, ()) is None
            (sql, args), *_ = recording.sent
            row = c.execute(b"EXPLAIN (ANALYZE, FORMAT JSON) " + _bytes(sql), args).fetchone()
            plan = next(iter(row.values()))[0]["Plan"]
            version = c.execute("SELECT max(version) AS v FROM schema_migrations").fetchone()
        assert _removed(plan) == 0, plan  # before: 3,051 rows read and filtered out
        assert version["v"] == SCHEMA_VERSION >= 14
        mine = mem.add(ME, "ok thanks")
        assert store.find_by_hash(ME.user_scope, common.content_hash, ()).id == mine.id
    finally:
        mem.close()


def test_a_schema_13_database_gets_the_index(pg_url: str) -> None:
    mem = Memory(pg_url, embedder="hashing", background=False)
    store: Any = mem.store
    with store._read() as c:  # the schema as version 13 left it
        c.execute("DROP INDEX records_hash")
        c.execute("CREATE INDEX records_hash ON records (content_hash)")
        c.execute("DELETE FROM schema_migrations WHERE version >= 14")
    mem.close()
    mem = Memory(pg_url, embedder="hashing", background=False)
    try:
        with mem.store._read() as c:  # type: ignore[attr-defined]
            found = c.execute(
                "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() "
                "AND indexname = 'records_hash'"
            ).fetchone()
        assert "records_hash ON " in found["indexdef"]
        assert '(tenant, "user", content_hash, seq)' in found["indexdef"]
    finally:
        mem.close()


def _bytes(sql: Any) -> bytes:
    if isinstance(sql, bytes):
        return sql
    if isinstance(sql, str):
        return sql.encode()
    return bytes(sql.as_string(None).encode())
