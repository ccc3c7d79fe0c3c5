"""PostgreSQL keeps a passage's vector once (schema 15), as SQLite does.

An add embeds its text into the embedding cache, then stores the record with that vector.
Before, both rows stayed: every message's vector was in ``embedding_cache`` and in
``vectors`` (2,239 of 12,190 bytes per message at 384 dims). Now the vector row takes the
entry over (``vectors.own``) when they hold the same vector, and the cache finds it through
the record; a dump lists it as a cache entry, as SQLite's does.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memstrata import Memory, Scope
from memstrata.embedder.cache import cache_key
from memstrata.records import Content
from memstrata.store.base import RecordWrite
from memstrata.store.postgres.schema import SCHEMA_VERSION
from memstrata.text import content_hash
from recording_embedder import RecordingEmbedder

ALICE = Scope("acme", "alice", session="s1")
BOB = Scope("acme", "bob", session="s1")


def _write_everything(mem: Memory) -> list[str]:
    """An add, a small batch of turns, a bulk batch (COPY), an update: their texts."""
    texts = ["Alice keeps her bicycle in the cellar"]
    mem.add(ALICE, texts[0])
    small = [f"a short turn number {i} about the garden" for i in range(5)]
    mem.add_messages(ALICE, [{"role": "user", "content": t} for t in small])
    bulk = [f"a turn of a long import, number {i}, about ferries" for i in range(80)]
    mem.add_messages(BOB, [{"role": "user", "content": t} for t in bulk])
    note = mem.add(ALICE, "the dentist is on Rua Augusta")
    mem.update(ALICE, note.id, expected_version=note.version, content="the dentist moved to Baixa")
    mem.flush()
    return [*texts, *small, *bulk, "the dentist moved to Baixa"]


def _rows(mem: Memory, sql: str) -> list[dict[str, Any]]:
    with mem.store._read() as c:  # type: ignore[attr-defined]
        return list(c.execute(sql).fetchall())


def test_a_passage_vector_is_stored_once(pg_url: str) -> None:
    mem = Memory(pg_url, embedder="hashing", background=False)
    try:
        texts = _write_everything(mem)
        model = mem.embedder.model_id
        assert _rows(mem, "SELECT key FROM embedding_cache") == []  # before: one row per text
        owned = _rows(mem, "SELECT count(*) AS n FROM vectors WHERE own")[0]["n"]
        assert owned == len(texts)
        for scope, batch in ((ALICE, texts[:6] + texts[-1:]), (BOB, texts[6:-1])):
            keys = [cache_key(t, query=False) for t in batch]
            found = mem.store.cached_vectors(scope.user_scope, model, keys)
            assert set(found) == set(keys)
            for text, key in zip(batch, keys, strict=True):  # the very vector the model gives
                np.testing.assert_array_equal(found[key], mem.embedder.embed_batch([text])[0])
        old = cache_key("the dentist is on Rua Augusta", query=False)
        assert mem.store.cached_vectors(ALICE.user_scope, model, [old]) == {}  # replaced
        assert mem.store.cached_vectors(Scope("acme", "carol"), model, [old]) == {}
    finally:
        mem.close()


def test_a_new_process_finds_the_vectors_and_embeds_nothing_again(pg_url: str) -> None:
    mem = Memory(pg_url, embedder="hashing", background=False)
    texts = _write_everything(mem)
    mem.close()
    counting = RecordingEmbedder()
    again = Memory(pg_url, embedder=counting, background=False)
    try:
        scoped = again._embedder.for_scope(ALICE.user_scope)  # type: ignore[attr-defined]
        scoped.embed_batch(texts[:6])
        assert counting.calls == []
        scoped.embed_batch(["a text never seen"])
        assert counting.calls == [(["a text never seen"], False)]
    finally:
        again.close()


def test_a_dump_lists_the_same_cache_entries_as_sqlite(pg_url: str, tmp_path: Path) -> None:
    dumps = []
    for url in (pg_url, f"sqlite:///{tmp_path / 'm.db'}"):
        mem = Memory(url, embedder="hashing", background=False)
        try:
            _write_everything(mem)
            dumps.append(
                sorted(
                    (e.scope_tok, e.model_id, e.key, e.vector.tobytes())
                    for batch in mem.store.dump_cache(7)
                    for e in batch
                )
            )
        finally:
            mem.close()
    assert dumps[0] == dumps[1]
    assert len(dumps[0]) == 87


def test_a_schema_14_database_gets_the_column(pg_url: str) -> None:
    mem = Memory(pg_url, embedder="hashing", background=False)
    with mem.store._read() as c:  # type: ignore[attr-defined]  # as version 14 left it
        c.execute("ALTER TABLE vectors DROP COLUMN own")
        c.execute("DELETE FROM schema_migrations WHERE version >= 15")
    mem.close()
    mem = Memory(pg_url, embedder="hashing", background=False)
    try:
        texts = _write_everything(mem)
        assert _rows(mem, "SELECT count(*) AS n FROM vectors WHERE own")[0]["n"] == len(texts)
        version = _rows(mem, "SELECT max(version) AS v FROM schema_migrations")[0]["v"]
        assert version == SCHEMA_VERSION >= 15
    finally:
        mem.close()


@pytest.mark.parametrize("committed", [True, False])
def test_an_entry_with_another_vector_is_not_taken_over(pg_url: str, committed: bool) -> None:
    """A cache entry holding some other vector for the text (another writer's, a model's
    nondeterminism) stays a cache row, and the record's vector is not marked."""
    mem = Memory(pg_url, embedder="hashing", background=False)
    try:
        template = mem.add(ALICE, "a first note")
        text = "the ferry leaves at nine"
        key = cache_key(text, query=False)
        model = mem.embedder.model_id
        other = np.ones(mem.embedder.dims, dtype=np.float32) / np.sqrt(mem.embedder.dims)
        mem.store.cache_vectors(ALICE, model, {key: other})
        if committed:
            mem.flush()  # in the table before the insert, not carried by it
        record = replace(
            template, id="ferry", content=Content(raw=text), content_hash=content_hash(text)
        )
        mem.store.insert([RecordWrite(record, mem.embedder.embed_batch([text])[0], ())])
        mem.flush()
        assert [r["key"] for r in _rows(mem, "SELECT key FROM embedding_cache")] == [key]
        own = _rows(
            mem, "SELECT own FROM vectors v JOIN records r ON r.seq = v.seq WHERE r.id = 'ferry'"
        )
        assert own == [{"own": False}]
        found = mem.store.cached_vectors(ALICE.user_scope, model, [key])
        np.testing.assert_array_equal(found[key], other)
    finally:
        mem.close()
