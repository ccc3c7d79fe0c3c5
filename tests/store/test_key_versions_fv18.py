"""``store.key_versions``: the records of one name (a fact key, a document) read by index,
exactly as ``Filters.matches`` finds them, on every backend.

- SQLite and PostgreSQL read a fact's key and a document's qa_id through schema 12's partial
  indexes (the plan of the statement names them, among thousands of other facts): the read
  does not grow with the name's history or the user's other facts;
- the answer equals what a listing with the metadata filter finds, for names that only look
  alike in the stored text (a nested pair, a number, a NUL elsewhere in the metadata);
- a transaction reads a name as the store does.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from typing import Any

import pytest

from memstrata import Memory, Scope
from memstrata.errors import ValidationError
from memstrata.filters import Filters, MetadataCondition
from memstrata.records import MemoryRecord, RecordStatus, RecordType
from memstrata.store.base import RecordWrite
from memstrata.store.postgres.schema import SCHEMA_VERSION as PG_SCHEMA
from memstrata.store.sqlite.migrations import SCHEMA_VERSION as SQLITE_SCHEMA

ALICE = Scope("acme", "alice")
BOB = Scope("acme", "bob")


def _fact(mem: Memory) -> MemoryRecord:
    fact = {"category": "identity", "key": "location", "value": "Lisbon", "confidence": 0.8}
    return mem.facts.upsert(ALICE, fact).record


def _copies(template: MemoryRecord, n: int, **changes: Any) -> list[RecordWrite]:
    return [
        RecordWrite(
            replace(
                template,
                id=f"copy-{i}",
                metadata={**template.metadata, "key": f"other {i % 400}"},
                **changes,
            ),
            None,
            (),
        )
        for i in range(n)
    ]


def _listed(mem: Memory, scope: Scope, kind: RecordType, field: str, value: str) -> list[str]:
    every = Filters(
        types=frozenset({kind}),
        metadata=(MetadataCondition(field, "eq", value),),
        include_deleted=True,
        include_superseded=True,
    )
    return [r.id for r in mem.store.list(scope, every, limit=100_000, newest_first=False)]


@pytest.mark.parametrize("db", ["sqlite", "postgresql"])
def test_a_keys_versions_are_read_by_index(db: str, tmp_path: Any, request: Any) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}" if db == "sqlite" else request.getfixturevalue("pg_url")
    mem = Memory(url, embedder="hashing", background=False)
    try:
        template = _fact(mem)
        mem.store.insert(_copies(template, 3000, status=RecordStatus.DELETED))
        doc = mem.knowledge.ingest(ALICE, "the ferries leave at nine", "ferries")[0]
        plans = {}
        for kind, field, value in (
            (RecordType.FACT, "key", "location"),
            (RecordType.KNOWLEDGE, "qa_id", "ferries"),
        ):
            if db == "sqlite":
                from memstrata.store.sqlite.store import key_versions_sql

                sql, args = key_versions_sql(ALICE, kind, field, value)
                conn = sqlite3.connect(str(tmp_path / "m.db"))
                rows = conn.execute("EXPLAIN QUERY PLAN " + sql, args).fetchall()
                conn.close()
                plans[kind] = " | ".join(str(r[-1]) for r in rows)
            else:
                from memstrata.store.postgres.store import key_versions_sql as pg_sql

                sql, args = pg_sql(ALICE, kind, field, value)
                with mem.store._read() as c:  # type: ignore[attr-defined]
                    c.execute("ANALYZE records")
                    rows = c.execute("EXPLAIN " + sql, args).fetchall()
                plans[kind] = " | ".join(str(next(iter(r.values()))) for r in rows)
        assert "records_fact_key" in plans[RecordType.FACT], plans
        assert "records_fact_live" in plans[RecordType.FACT], plans
        assert "records_doc_key" in plans[RecordType.KNOWLEDGE], plans
        assert "records_doc_live" in plans[RecordType.KNOWLEDGE], plans
        found = mem.store.key_versions(ALICE, RecordType.FACT, "key", "location")
        assert (found.live, found.newest) == (True, template.id)
        found = mem.store.key_versions(ALICE, RecordType.KNOWLEDGE, "qa_id", "ferries")
        assert (found.live, found.newest) == (True, doc.id)
    finally:
        mem.close()


def test_the_name_matches_exactly_as_the_metadata_filter(mem: Memory) -> None:
    template = _fact(mem)
    look_alikes = [
        ("nested", {"category": "x", "other": {"key": "location"}}),  # the pair, nested
        ("number", {"category": "x", "key": 7}),
        ("object", {"category": "x", "key": {"a": 1}}),
        ("nul", {"category": "nul \x00 here", "key": "location"}),  # a NUL elsewhere: it is
        ("nul-key", {"category": "x", "key": "loca\x00tion"}),
        ("soh-key", {"category": "x", "key": "loca\x01tion"}),
        ("escape", {"category": "x", "key": "loca\\u0000tion"}),
        ("gone", {"category": "x", "key": "location"}),
    ]
    writes = [
        RecordWrite(replace(template, id=f"alike-{name}", metadata=meta), None, ())
        for name, meta in look_alikes
    ]
    mem.store.insert(writes)
    mem.store.set_status(
        ALICE, ["alike-gone", template.id], RecordStatus.DELETED, template.created_at
    )
    for value in ("location", "loca\x01tion", "loca\\u0000tion", "7", '{"a":1}'):
        listed = _listed(mem, ALICE, RecordType.FACT, "key", value)
        found = mem.store.key_versions(ALICE, RecordType.FACT, "key", value)
        assert found.newest == (listed[-1] if listed else None), (value, listed)
        live = [i for i in listed if mem.store.get(ALICE, i, include_deleted=True).is_active]
        assert found.live == bool(live), (value, listed)
    assert _listed(mem, ALICE, RecordType.FACT, "key", "location") == [
        template.id,
        "alike-nul",
        "alike-gone",
    ]
    assert mem.store.key_versions(ALICE, RecordType.FACT, "key", "location").live  # the NUL one
    assert mem.store.key_versions(BOB, RecordType.FACT, "key", "location").newest is None


def test_a_transaction_reads_a_name_as_the_store_does(mem: Memory) -> None:
    """``UnitOfWork.key_versions`` (a first version's check, ``layers/races.py``) answers as
    the store does. Until session 30 ``key_versions`` also said which ids of a ``probe`` were
    taken (the walk of hashed first ids, gone with them)."""
    fact = _fact(mem)
    mem.add(BOB, "bob's note", dedup=False)
    for name in ("location", "nothing"):
        outside = mem.store.key_versions(ALICE, RecordType.FACT, "key", name)
        with mem.store.transaction() as tx:
            assert tx.key_versions(ALICE, RecordType.FACT, "key", name) == outside
    assert (outside.live, outside.newest) == (False, None)
    found = mem.store.key_versions(ALICE, RecordType.FACT, "key", "location")
    assert (found.live, found.newest) == (True, fact.id)


def test_a_field_or_type_that_is_no_plain_name_is_refused(mem: Memory) -> None:
    for field in ("key'", "$.key", "", "a b"):
        with pytest.raises(ValidationError, match="plain name"):
            mem.store.key_versions(ALICE, RecordType.FACT, field, "x")
    with pytest.raises(ValidationError, match="record type"):
        mem.store.key_versions(ALICE, "fact'; DROP TABLE records; --", "key", "x")


NAME_INDEXES = ("records_fact_key", "records_fact_live", "records_doc_key", "records_doc_live")


def test_a_schema_11_sqlite_file_gets_the_name_indexes(tmp_path: Any) -> None:
    path = tmp_path / "m.db"
    mem = Memory(f"sqlite:///{path}", embedder="hashing", background=False)
    fact = _fact(mem)
    mem.close()
    conn = sqlite3.connect(path, isolation_level=None)
    for name in NAME_INDEXES:  # the file as schema 11 left it
        conn.execute(f"DROP INDEX {name}")
    conn.execute("PRAGMA user_version = 11")
    conn.close()
    mem = Memory(f"sqlite:///{path}", embedder="hashing", background=False)
    try:
        found = mem.store.key_versions(ALICE, RecordType.FACT, "key", "location")
        assert (found.live, found.newest) == (True, fact.id)
    finally:
        mem.close()
    conn = sqlite3.connect(path)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    conn.close()
    assert set(NAME_INDEXES) <= names and version == SQLITE_SCHEMA


def test_a_schema_11_postgresql_schema_gets_the_name_indexes(pg_url: str) -> None:
    mem = Memory(pg_url, embedder="hashing", background=False)
    fact = _fact(mem)
    with mem.store._read() as c:  # type: ignore[attr-defined]
        for name in NAME_INDEXES:  # the schema as version 11 left it
            c.execute(f"DROP INDEX {name}")
        c.execute("DELETE FROM schema_migrations WHERE version >= 12")
    mem.close()
    mem = Memory(pg_url, embedder="hashing", background=False)
    try:
        found = mem.store.key_versions(ALICE, RecordType.FACT, "key", "location")
        assert (found.live, found.newest) == (True, fact.id)
        with mem.store._read() as c:  # type: ignore[attr-defined]
            names = {
                r["indexname"]
                for r in c.execute(
                    "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
                )
            }
            version = c.execute("SELECT max(version) AS v FROM schema_migrations").fetchone()
        assert set(NAME_INDEXES) <= names and version["v"] == PG_SCHEMA
    finally:
        mem.close()


@pytest.mark.parametrize("db", ["sqlite", "postgresql"])
def test_a_listing_of_a_keys_current_fact_is_read_by_index(
    db: str, tmp_path: Any, request: Any
) -> None:
    """What every upsert asks first (the key's current fact: ``Filters`` of the type and the
    key) reads the live index; with deleted ones, the index of the key's rows. Before, every
    fact row of the user was read (``records_type``)."""
    url = f"sqlite:///{tmp_path / 'm.db'}" if db == "sqlite" else request.getfixturevalue("pg_url")
    mem = Memory(url, embedder="hashing", background=False)
    try:
        template = _fact(mem)
        mem.store.insert(_copies(template, 3000, status=RecordStatus.DELETED))
        plans = {}
        for live in (True, False):
            flt = Filters(
                types=frozenset({RecordType.FACT}),
                metadata=(MetadataCondition("key", "eq", "location"),),
                include_deleted=not live,
                include_superseded=not live,
            )
            if db == "sqlite":
                from memstrata.store.sqlite.where import filters_sql, scope_sql

                sw, sa = scope_sql(ALICE)
                fw, fa = filters_sql(flt)
                conn = sqlite3.connect(str(tmp_path / "m.db"))
                rows = conn.execute(
                    f"EXPLAIN QUERY PLAN SELECT * FROM records WHERE {sw} AND {fw}", [*sa, *fa]
                ).fetchall()
                conn.close()
                plans[live] = " | ".join(str(r[-1]) for r in rows)
            else:
                from memstrata.store.postgres.where import filters_sql as pg_filters
                from memstrata.store.postgres.where import scope_sql as pg_scope

                sw, sa = pg_scope(ALICE)
                fw, fa = pg_filters(flt)
                with mem.store._read() as c:  # type: ignore[attr-defined]
                    c.execute("ANALYZE records")
                    rows = c.execute(
                        f"EXPLAIN SELECT * FROM records WHERE {sw} AND {fw}", [*sa, *fa]
                    ).fetchall()
                plans[live] = " | ".join(str(next(iter(r.values()))) for r in rows)
            assert [r.id for r in mem.store.list(ALICE, flt)] == [template.id]
        assert "records_fact_live" in plans[True], plans
        assert "records_fact_key" in plans[False], plans
    finally:
        mem.close()
