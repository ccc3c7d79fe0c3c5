"""A store file written by schema v1 opens, upgrades in place and reads back the same."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from memstrata.errors import ValidationError
from memstrata.filters import Filters
from memstrata.records import Content, RecordStatus
from memstrata.scope import Scope
from memstrata.search.tokenize import tokenize
from memstrata.store.sqlite import SQLiteStore
from memstrata.store.sqlite.codec import COLUMNS, encode_record, encode_vector, scope_token
from memstrata.store.sqlite.lexical import terms_text
from memstrata.store.sqlite.migrations import MIGRATIONS, SCHEMA_VERSION, _statements

from .conftest import T0, Maker, unit

ME = Scope("t1", "u1")


def _write_v1(path: Path, maker: Maker) -> dict[str, object]:
    """A v1 file made with the v1 DDL and v1 row layout (what memstrata 0.1 wrote)."""
    conn = sqlite3.connect(path, isolation_level=None)
    step = MIGRATIONS[0][1]
    assert MIGRATIONS[0][0] == 1 and isinstance(step, str)
    for statement in _statements(step):
        conn.execute(statement)
    cols = ", ".join(COLUMNS)
    marks = ", ".join("?" * len(COLUMNS))
    fact = maker.record("Alice lives in Lisbon", tags=("home",), source_ids=("m1",))
    fact = replace(fact, content=Content(fact.text, structured={"members": ["m1"], "hits": 1}))
    v2 = replace(
        fact,
        version=2,
        content=Content("Alice lives in Porto", structured={"members": ["m1", "m2"], "hits": 2}),
        source_ids=("m1", "m2"),
        tags=("home", "moved"),
        updated_at=T0 + timedelta(days=1),
    )
    v3 = replace(
        v2,
        version=3,
        status=RecordStatus.DELETED,
        deleted_at=T0 + timedelta(days=2),
        updated_at=T0 + timedelta(days=2),
    )
    other = maker.record("Bob likes tea", user="u2")
    vectors = {fact.id: unit(maker.rng), other.id: unit(maker.rng)}
    for seq, (current, versions) in enumerate([(v3, [fact, v2]), (other, [])], start=1):
        conn.execute(
            f"INSERT INTO records (seq, {cols}) VALUES (?, {marks})", (seq, *encode_record(current))
        )
        conn.execute(
            "INSERT INTO lexical (rowid, scope_tok, terms) VALUES (?, ?, ?)",
            (seq, scope_token(current.tenant, current.user), terms_text(tokenize(current.text))),
        )
        conn.execute(
            "INSERT INTO vectors (record_id, tenant, user, model, dims, vector) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                current.id,
                current.tenant,
                current.user,
                "test",
                16,
                encode_vector(vectors[current.id]),
            ),
        )
        for old in versions:
            conn.execute(
                f"INSERT INTO record_versions ({cols}) VALUES ({marks})", encode_record(old)
            )
    conn.execute(
        "INSERT INTO embedding_cache (model_id, content_hash, dims, vector) "
        "VALUES ('test', 'h', 16, ?)",
        (encode_vector(unit(maker.rng)),),
    )
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    return {"history": [fact, v2, v3], "other": other, "vectors": vectors}


def test_v1_file_upgrades_and_reads_back(tmp_path: Path, maker: Maker) -> None:
    path = tmp_path / "v1.db"
    made = _write_v1(path, maker)
    store = SQLiteStore(str(path))
    try:
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert "record_versions" not in tables and "record_history" in tables
        conn.close()
        history = made["history"]
        assert isinstance(history, list)
        fact = history[0]
        assert store.history(ME, fact.id) == history
        assert store.get(ME, fact.id, include_deleted=True) == history[-1]
        other = made["other"]
        assert store.get(Scope("t1", "u2"), other.id) == other  # type: ignore[attr-defined]
        vectors = made["vectors"]
        assert isinstance(vectors, dict)
        hits = store.vector_search(Scope("t1", "u2"), vectors[other.id], 1, Filters())  # type: ignore[attr-defined]
        assert [c.id for c in hits] == [other.id]  # type: ignore[attr-defined]
        assert [c.id for c in store.lexical_search(Scope("t1", "u2"), ["tea"], 5, Filters())] == [
            other.id
        ]  # type: ignore[attr-defined]
        # the upgraded file behaves like a new one: per-user ids, new history, counters
        twin = maker.write(maker.record("a twin", tenant="t9", id=fact.id))
        store.insert([twin])
        store.set_status(ME, [fact.id], RecordStatus.ACTIVE, T0 + timedelta(days=3))
        assert [r.version for r in store.history(ME, fact.id)] == [1, 2, 3, 4]
        assert store.history(ME, fact.id)[:3] == history
        store.add_counts(ME, "hits", {fact.id: 1})
        assert store.counts(ME, "hits", [fact.id]) == {fact.id: 1}
        with pytest.raises(ValidationError, match="exists already"):
            store.insert([maker.write(maker.record("dup", id=fact.id))])
    finally:
        store.close()
    # and it opens again without migrating twice
    again = SQLiteStore(str(path))
    assert len(again.history(ME, fact.id)) == 4
    again.close()


def test_unknown_newer_version_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    before = path.read_bytes()
    from memstrata.errors import SchemaVersionError

    with pytest.raises(SchemaVersionError):
        SQLiteStore(str(path))
    assert path.read_bytes() == before
    assert np.array_equal(
        np.frombuffer(before, np.uint8), np.frombuffer(path.read_bytes(), np.uint8)
    )
