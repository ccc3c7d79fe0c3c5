"""An older store gets its index of links on opening (purge31b): SQLite schema 22 writes
the link rows the writes of what the file holds made (every version read once), and a
purge then rewrites what it did; PostgreSQL step 29 makes the indexes its look-ups use
(EXPLAIN)."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

from memstrata import Memory
from memstrata.store.postgres.schema import SCHEMA_VERSION as PG_SCHEMA_VERSION

from .test_links_equal_scan import _build, _state

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from store.reterm_files import _pg, pg_as_schema, pg_version  # noqa: E402

_LINK = "substr(r, 1, 4) = CAST('lnk:' AS BLOB)"

_BLANK: dict[str, Any] = {
    "sources": [],
    "superseded_by": None,
    "links": {},
    "members": [],
    "cluster_id": None,
    "dropped": None,
    "related": [],
}
SPECS: list[dict[str, Any]] = [  # 3 turns (0..2), then records 3..7
    {"type": "note", "versions": [{**_BLANK, "sources": [0, 1]}, {**_BLANK, "sources": [1]}]},
    {
        "type": "summary",
        "versions": [
            {**_BLANK, "sources": [3, 0]},
            {**_BLANK, "sources": [0], "dropped": [3]},
            {**_BLANK, "sources": [0], "dropped": [1], "related": [6]},
        ],
    },
    {"type": "fact", "versions": [{**_BLANK, "links": {"replaces": 3}, "superseded_by": 4}]},
    {"type": "key", "versions": [{**_BLANK, "cluster_id": 7}, {**_BLANK, "cluster_id": 3}]},
    {"type": "cluster", "versions": [{**_BLANK, "members": [0, 2], "links": {"promoted_key": 6}}]},
]


def _links(path: Path) -> tuple[int, list[tuple[object, ...]]]:
    conn = sqlite3.connect(path)
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        rows = sorted(conn.execute(f"SELECT t, r, u, i FROM rr WHERE {_LINK}").fetchall())
        return version, rows
    finally:
        conn.close()


def test_schema_22_writes_the_rows_the_writes_made(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory(f"sqlite:///{path}", embedder="hashing", background=False) as mem:
        owner, ids = _build(mem, SPECS, "bob")
    version, want = _links(path)
    assert version == 22 and len(want) == 1 + 3 + 1 + 2 + 1  # (in SPECS order)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(f"DELETE FROM rr WHERE {_LINK}")
        conn.execute("PRAGMA user_version = 21")
    finally:
        conn.close()
    assert _links(path) == (21, [])
    with Memory(f"sqlite:///{path}", embedder="hashing", background=False) as mem:
        assert _links(path) == (22, want)
        mem.store.purge(owner, [ids[3], ids[7]])
        after = _state(mem, owner, ids)
    with Memory(f"sqlite:///{tmp_path / 'fresh.db'}", embedder="hashing", background=False) as m:
        owner, ids = _build(m, SPECS, "bob")
        m.store.purge(owner, [ids[3], ids[7]])
        assert _state(m, owner, ids) == after
    marked = [v for v in after if v[1] is not None and "[purged]" in str(v[1])]
    assert len(marked) == 3, after  # the summary's earlier note, the fact, the key


def test_step_29_makes_the_indexes_the_lookup_reads(pg_url: str) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        owner, ids = _build(mem, SPECS, "bob")
    with _pg(pg_url) as conn:  # the schema as step 28 left it
        conn.execute("DROP INDEX records_linked")
        conn.execute("DROP INDEX records_noted")
        conn.execute("DROP FUNCTION linked_ids")
    pg_as_schema(pg_url, 28)
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        assert pg_version(pg_url) == PG_SCHEMA_VERSION  # (was 29: pg32 added step 30)
    from memstrata.store.postgres.schema import LINKED_ROWS, NOTED_ROWS

    with _pg(pg_url) as conn:
        conn.execute("ANALYZE records")
        conn.execute("SET enable_seqscan = off")  # a small table: which index serves it

        def plan(sql: str, args: list[Any]) -> str:
            return "\n".join(str(r[0]) for r in conn.execute("EXPLAIN " + sql, args))

        linked = plan(
            "SELECT seq FROM records WHERE tenant = 'acme' AND \"user\" = 'bob' AND "
            "linked_ids(structured, metadata, relations, superseded_by) && %s::text[] "
            f"AND {LINKED_ROWS}",
            [[ids[3]]],
        )
        noted = plan(
            f"SELECT seq FROM records WHERE tenant = 'acme' AND \"user\" = 'bob' AND {NOTED_ROWS}",
            [],
        )
        ids_of = conn.execute(
            "SELECT linked_ids(%s, %s, %s, %s)",
            [
                '{"replaces": "a", "carries_out": "b", "episode_id": 7, "members": ["m"]}',
                '{"cluster_id": "c", "refreshed": {"dropped_sources": ["d", "[purged]", 1]}}',
                '[["similar_to", "r"], ["similar_to", "q"]]',
                "s",
            ],
        ).fetchone()
        found = conn.execute(
            "SELECT count(*) FROM records WHERE "
            "linked_ids(structured, metadata, relations, superseded_by) && %s::text[] "
            f"AND {LINKED_ROWS}",
            [[ids[3]]],
        ).fetchone()
    # every link field's id (strings only; a cluster's members are not links)
    assert ids_of is not None
    assert sorted(ids_of[0]) == ["[purged]", "a", "b", "c", "d", "q", "r", "s"]
    assert "records_linked" in linked, linked
    assert "records_noted" in noted, noted
    assert found is not None and found[0] == 2  # the fact (replaces), the key (cluster_id)
