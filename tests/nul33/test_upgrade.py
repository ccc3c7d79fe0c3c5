"""A store left by PostgreSQL step 33 (its linked_ids, cited_ids and past-links trigger
casting text to jsonb) upgraded to step 34 (nul33): the records_linked index entries
written before give the rows the new function gives (no REINDEX needed), a purge by ids
still finds through it the records linking to what it purges, and a linked note with a
NUL in its metadata is then stored."""

from __future__ import annotations

import sys
from pathlib import Path

from memstrata import Memory, Scope
from memstrata.store.postgres import schema
from memstrata.store.postgres.schema import SCHEMA_VERSION

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from store.reterm_files import _pg, pg_as_schema, pg_query, pg_version  # noqa: E402

ME = Scope("acme", "alice")
_IDS = (
    "SELECT id, linked_ids(structured, metadata, relations, superseded_by), "
    "cited_ids(type, source_ids, structured, superseded_by) FROM records ORDER BY seq"
)


def _functions(url: str) -> str:
    """The store's own linked_ids (other tests' schemas in the database hold theirs)."""
    return str(
        pg_query(
            url,
            "SELECT prosrc FROM pg_proc WHERE proname = 'linked_ids' "
            "AND pronamespace = current_schema()::regnamespace",
        )
    )


def _linking(url: str, target: str) -> list[str]:
    """The records linking to ``target``, read through records_linked (no scan allowed)."""
    with _pg(url) as conn:
        conn.execute(b"SET enable_seqscan = off")
        plan = conn.execute(
            b"EXPLAIN SELECT id FROM records WHERE "
            b"linked_ids(structured, metadata, relations, superseded_by) && %s::text[] AND "
            + schema.LINKED_ROWS.encode(),
            ([target],),
        ).fetchall()
        assert "records_linked" in str(plan)
        rows = conn.execute(
            b"SELECT id FROM records WHERE "
            b"linked_ids(structured, metadata, relations, superseded_by) && %s::text[] AND "
            + schema.LINKED_ROWS.encode(),
            ([target],),
        ).fetchall()
        return sorted(str(r[0]) for r in rows)


def test_a_store_upgraded_from_33_keeps_its_index(pg_url: str) -> None:
    with Memory(pg_url, embedder="hashing", background=False):
        pass
    with _pg(pg_url) as conn:  # the functions and the trigger as step 33 left them
        for step in (schema._V28_CITED, schema._V29_LINKED, schema._V33_PAST_LINKS_DROPPED):
            conn.execute(step.encode())
    assert "ufffd" not in _functions(pg_url)
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        first = mem.add(ME, "the heron wades in grey water", metadata={"a": "\\u0000"})
        second = mem.add(ME, "the heron wades in grey water today", metadata={"b": 1})
        assert [r.target_id for r in second.relations] == [first.id]
        other = mem.add(ME, "a kingfisher dives for a fish", metadata={"c": 2})
    before = pg_query(pg_url, _IDS)
    assert _linking(pg_url, first.id) == [second.id]
    pg_as_schema(pg_url, 33)
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        assert pg_version(pg_url) == SCHEMA_VERSION == 34
        assert "ufffd" in _functions(pg_url)
        assert pg_query(pg_url, _IDS) == before  # the old entries are the new function's
        assert _linking(pg_url, first.id) == [second.id]  # entries written by step 33
        mem.purge(ME, [first.id])
        assert [r.target_id for r in mem.get(ME, second.id).relations] == ["[purged]"]
        assert mem.get(ME, other.id).metadata == {"c": 2}
        nul = mem.add(ME, "a kingfisher dives for a fish!", metadata={"k": "x\x00y"})
        assert nul.id == other.id and nul.metadata["k"] == "x\x00y"
