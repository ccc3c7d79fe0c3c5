"""A re-embedded store keeps each passage vector once, as an ingest does: the cache entry
the migration's embedder wrote for a record's text moves into the record's vector row
(``vectors.own``), on SQLite and PostgreSQL.

Before (session 21's note): ``set_vectors`` wrote every new vector with ``own`` unset and
left the new model's cache entries beside them, so a re-embedded store held each text's
vector twice until the texts were written again; it also read each record's ``seq`` with a
statement of its own."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from legacy_vectors import another_model
from memstrata import Memory, Scope
from memstrata.embedder.cache import cache_key

ALICE = Scope("acme", "alice", session="s1")
BOB = Scope("acme", "bob", session="s1")
TEXTS = [f"turn {i} of a long week: the ferry to Kyoto left at {i % 12} o'clock" for i in range(60)]


def _url(db: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if db == "sqlite":
        return f"sqlite:///{tmp_path / 'm.db'}"
    return str(request.getfixturevalue("pg_url"))


def _counts(mem: Memory, db: str, tmp_path: Path, model: str) -> tuple[int, int, int]:
    """(cache entries, own vector rows, all vector rows) of ``model``, in the database."""
    if db == "sqlite":
        mem.flush()
        mem.close()
        with sqlite3.connect(tmp_path / "m.db") as conn:
            rows = [
                conn.execute(sql, (model,)).fetchone()[0]
                for sql in (
                    "SELECT count(*) FROM embedding_cache WHERE model_id = ?",
                    "SELECT count(*) FROM vectors WHERE own = 1 AND model = ?",
                    "SELECT count(*) FROM vectors WHERE model = ?",
                )
            ]
        return rows[0], rows[1], rows[2]
    with mem.store._read() as c:  # type: ignore[attr-defined]
        out = [
            int(c.execute(sql, (model,)).fetchone()["n"])
            for sql in (
                "SELECT count(*) AS n FROM embedding_cache WHERE model_id = %s",
                "SELECT count(*) AS n FROM vectors WHERE own AND model = %s",
                "SELECT count(*) AS n FROM vectors WHERE model = %s",
            )
        ]
    mem.close()
    return out[0], out[1], out[2]


@pytest.mark.parametrize("db", ["sqlite", "postgresql"])
def test_a_reembedded_store_keeps_each_vector_once(
    db: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = _url(db, tmp_path, request)
    mem = Memory(url, embedder="hashing:64", background=False)
    try:
        for scope in (ALICE, BOB):
            mem.add_messages(scope, [{"role": "user", "content": t} for t in TEXTS])
        mem.flush()
    finally:
        mem.close()
    mem = Memory(url, embedder="hashing:48", reembed=True, background=False)
    model = mem.embedder.model_id
    keys = [cache_key(t, query=False) for t in TEXTS]
    for scope in (ALICE, BOB):  # the cache still finds every text's new vector
        assert set(mem.store.cached_vectors(scope.user_scope, model, keys)) == set(keys)
        assert len(mem.search(scope, "ferry to Kyoto", top_k=5)) == 5
    entries, own, rows = _counts(mem, db, tmp_path, model)
    assert rows >= 2 * len(TEXTS)  # the turns and what the jobs derived from them
    assert (entries, own) == (0, rows)


@pytest.mark.parametrize("db", ["sqlite", "postgresql"])
def test_set_vectors_of_a_missing_record_writes_nothing(
    db: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from dataclasses import replace

    import numpy as np

    from memstrata.errors import NotFoundError

    mem = Memory(_url(db, tmp_path, request), embedder="hashing:16", background=False)
    try:
        mem.add_messages(ALICE, [{"role": "user", "content": t} for t in TEXTS[:3]])
        records = mem.list(ALICE.user_scope, limit=10)
        ghost = replace(records[0], id="no-such-record")
        items = [(r, np.ones(16, np.float32) / 4.0) for r in [*records, ghost]]
        with (
            another_model(mem.store, "other-model", 16),
            pytest.raises(NotFoundError, match="no-such-record"),
        ):
            mem.store.set_vectors(items, "other-model", 16)
        assert {r.embedding_model for r in mem.list(ALICE.user_scope, limit=10)} == {
            mem.embedder.model_id
        }
    finally:
        mem.close()
