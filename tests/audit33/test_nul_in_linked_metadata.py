"""A note whose metadata holds a NUL (stored as a ``\\u0000`` escape in the JSON text, which
memstrata accepts on every store: tests/postgres/test_pg_lexical_postings.py) that gets a
link on PostgreSQL — a ``similar_to`` relation to a near-duplicate, or a merge into such a
note — is refused there: "PostgreSQL ... failed: unsupported Unicode escape sequence;
SQLSTATE 22P05", not retryable and naming no fix. SQLite and memory:// store it. The
records_linked index's ``linked_ids(structured, metadata, relations, superseded_by)``
(store/postgres/schema.py, pg33's this session) casts the metadata text to ``jsonb``, which
cannot hold ``\\u0000``; a row enters that partial index as soon as it has a relation
(session 33's audit)."""

from __future__ import annotations

from memstrata import Memory, Scope

ME = Scope("acme", "alice")
NUL_META = {"k": "x\x00y"}


def _similar_with_nul(url: str) -> None:
    with Memory(url, embedder="hashing", background=False) as mem:
        first = mem.add(ME, "note 0 odd metadata", metadata={"a": 1})
        second = mem.add(ME, "note 1 odd metadata", metadata=NUL_META)
        assert second.metadata == NUL_META
        assert [r.target_id for r in second.relations] == [first.id]
        merged_into = mem.add(ME, "the heron is grey", metadata=NUL_META)
        again = mem.add(ME, "the heron is grey!", metadata={"j": 1})
        assert again.id == merged_into.id and again.metadata["k"] == "x\x00y"


def test_sqlite_stores_a_linked_note_with_a_nul_in_its_metadata(tmp_path: object) -> None:
    _similar_with_nul(f"sqlite:///{tmp_path}/m.db")


def test_postgresql_stores_a_linked_note_with_a_nul_in_its_metadata(pg_url: str) -> None:
    _similar_with_nul(pg_url)
