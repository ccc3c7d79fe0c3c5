"""A search question's vector is never written to the store (issue 13 §3: no writes on the
read path), on every backend and every read that embeds a question; a repeated question is
still embedded once per process. Schema 13 drops the query entries earlier versions stored.

Before: every new question of a user added one ``q:`` row to ``embedding_cache`` (written
behind the search on PostgreSQL), kept until the user was purged, so the table grew with
every question ever asked.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memstrata import Memory, Scope
from memstrata.embedder.cache import cache_key
from memstrata.store.postgres.schema import SCHEMA_VERSION as PG_SCHEMA
from memstrata.store.sqlite.migrations import SCHEMA_VERSION as SQLITE_SCHEMA
from recording_embedder import RecordingEmbedder

ALICE = Scope("acme", "alice", session="s1")
QUESTIONS = (
    "where does Alice keep her bicycle",
    "what did Alice cook on Sunday",
    "which city is Alice moving to",
    "who is Alice's dentist",
)


def _url(db: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if db == "sqlite":
        return f"sqlite:///{tmp_path / 'm.db'}"
    if db == "memory":
        return "memory://"
    return str(request.getfixturevalue("pg_url"))


def _query_rows(mem: Memory, db: str, tmp_path: Path) -> int:
    """``embedding_cache`` rows of queries, counted in the database itself."""
    if db == "sqlite":
        mem.flush()
        with sqlite3.connect(tmp_path / "m.db") as conn:
            return int(
                conn.execute(
                    "SELECT count(*) FROM embedding_cache WHERE substr(key, 1, 2) = 'q:'"
                ).fetchone()[0]
            )
    with mem.store._read() as c:  # type: ignore[attr-defined]
        row = c.execute(
            "SELECT count(*) AS n FROM embedding_cache WHERE starts_with(key, 'q:')"
        ).fetchone()
        return int(row["n"])


@pytest.mark.parametrize("db", ["sqlite", "memory", "postgresql"])
def test_reads_store_no_query_vector(
    db: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    embedder = RecordingEmbedder()
    mem = Memory(_url(db, tmp_path, request), embedder=embedder, background=False)
    try:
        mem.add_message(ALICE, "user", "I keep my bicycle in the cellar")
        mem.add(ALICE, "Alice is moving to Porto in May")
        mem.facts.upsert(
            ALICE, {"category": "identity", "key": "city", "value": "Porto", "confidence": 0.9}
        )
        mem.search(ALICE.user_scope, QUESTIONS[0])
        mem.build_context(ALICE, QUESTIONS[1], token_budget=500)
        mem.facts.relevant(ALICE, QUESTIONS[2])
        mem.episodes.recall(ALICE, QUESTIONS[3])
        mem.search(ALICE.user_scope, QUESTIONS[0])  # again: from the process's cache
        model = mem.embedder.model_id
        keys = [cache_key(q, query=True) for q in QUESTIONS]
        assert mem.store.cached_vectors(ALICE.user_scope, model, keys) == {}
        if db != "memory":
            assert _query_rows(mem, db, tmp_path) == 0
        assert sorted(embedder.queries) == sorted(QUESTIONS)  # each embedded once
        # a passage's vector still is found by its text's key
        passage = cache_key("I keep my bicycle in the cellar", query=False)
        assert set(mem.store.cached_vectors(ALICE.user_scope, model, [passage])) == {passage}
    finally:
        mem.close()


def _entries(dims: int) -> dict[str, Any]:
    vec = np.ones(dims, dtype=np.float32) / np.sqrt(dims)
    return {cache_key("a passage", query=False): vec, cache_key("an old question", query=True): vec}


def test_a_schema_12_sqlite_file_loses_its_query_vectors(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    mem = Memory(f"sqlite:///{path}", embedder="hashing", background=False)
    model, dims = mem.embedder.model_id, mem.embedder.dims
    mem.store.cache_vectors(ALICE, model, _entries(dims))  # as schema 12 left them
    mem.close()
    with sqlite3.connect(path, isolation_level=None) as conn:
        conn.execute("PRAGMA user_version = 12")
    mem = Memory(f"sqlite:///{path}", embedder="hashing", background=False)
    try:
        kept = mem.store.cached_vectors(ALICE, model, list(_entries(dims)))
        assert set(kept) == {cache_key("a passage", query=False)}
    finally:
        mem.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SQLITE_SCHEMA >= 13


def test_a_schema_12_postgresql_schema_loses_its_query_vectors(pg_url: str) -> None:
    mem = Memory(pg_url, embedder="hashing", background=False)
    model, dims = mem.embedder.model_id, mem.embedder.dims
    mem.store.cache_vectors(ALICE, model, _entries(dims))
    mem.flush()
    with mem.store._read() as c:  # type: ignore[attr-defined]
        c.execute("DELETE FROM schema_migrations WHERE version >= 13")
    mem.close()
    mem = Memory(pg_url, embedder="hashing", background=False)
    try:
        kept = mem.store.cached_vectors(ALICE, model, list(_entries(dims)))
        assert set(kept) == {cache_key("a passage", query=False)}
        with mem.store._read() as c:  # type: ignore[attr-defined]
            version = c.execute("SELECT max(version) AS v FROM schema_migrations").fetchone()
        assert version["v"] == PG_SCHEMA >= 13
    finally:
        mem.close()
