"""A NUL in a note's metadata (a value or a key; kept as a ``\\u0000`` escape in the JSON
text) on PostgreSQL, through the public API: every call a user makes on such a note works
there as on SQLite (session 33, nul33). Before step 34 of the PostgreSQL schema a link to
it (a relation, a merge), an update dropping a link, a purge by ids and an import of such
notes were refused: "unsupported Unicode escape sequence; SQLSTATE 22P05"."""

from __future__ import annotations

import io

import pytest

from memstrata import Memory, Scope

ME = Scope("acme", "alice")
VALUE = {"k": "x\x00y", "n": 1}
KEY = {"a\x00b": "v", "n": 2}
ESCAPED = {"k": "\\u0000 is text", "j": "x\\\x00y"}  # a literal "\u0000", a "\" then a NUL


def _linked(mem: Memory, metadata: dict[str, object]) -> tuple[str, str]:
    """A note with ``metadata`` related (``similar_to``) to a near-duplicate."""
    first = mem.add(ME, "the heron wades in grey water", metadata={"a": 1})
    second = mem.add(ME, "the heron wades in grey water today", metadata=metadata)
    assert second.metadata == metadata
    assert [r.target_id for r in second.relations] == [first.id]
    return first.id, second.id


@pytest.mark.parametrize("metadata", [VALUE, KEY, ESCAPED], ids=["value", "key", "escaped"])
def test_a_linked_note_with_a_nul_is_stored_found_and_filtered(
    pg_url: str, metadata: dict[str, object]
) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        _, second = _linked(mem, metadata)
        for key, value in metadata.items():
            listed = mem.list(ME, filters={"metadata": {key: value}})
            assert [r.id for r in listed] == [second]
            hits = mem.search(ME, "heron wades", filters={"metadata": {key: value}})
            assert [h.id for h in hits] == [second]
        assert mem.get(ME, second).metadata == metadata


def test_an_update_of_a_linked_note_with_a_nul(pg_url: str) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        _, second = _linked(mem, VALUE)
        rec = mem.get(ME, second)
        done = mem.update(
            ME, second, expected_version=rec.version, metadata={**VALUE, "more": "a\x00"}
        )
        assert done.metadata == {**VALUE, "more": "a\x00"}
        again = mem.update(ME, second, expected_version=done.version, content="a grey heron")
        assert again.metadata == {**VALUE, "more": "a\x00"}


def test_a_merge_into_a_note_with_a_nul(pg_url: str) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        kept = mem.add(ME, "the heron is grey", metadata=KEY)
        again = mem.add(ME, "the heron is grey!", metadata={"j": 1})
        assert again.id == kept.id and again.metadata["a\x00b"] == "v"


def test_a_purge_by_ids_of_linked_notes_with_a_nul(pg_url: str) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        first, second = _linked(mem, VALUE)
        mem.purge(ME, [first])
        left = mem.get(ME, second)
        assert left.metadata == VALUE
        assert first not in [r.target_id for r in left.relations]
        mem.purge(ME, [second])
        assert mem.list(ME) == []


def test_an_export_then_import_of_linked_notes_with_a_nul(pg_url: str) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        _linked(mem, VALUE)
        kept = mem.add(ME, "the heron is grey", metadata=KEY)
        mem.add(ME, "the heron is grey!", metadata={"j": 1})
        out = io.StringIO()
        mem.export_records(ME, out)
        into = Scope("acme", "bob")
        mem.import_records(io.StringIO(out.getvalue()), into=into)
        got = {r.content.raw: r.metadata for r in mem.list(into)}
        assert got["the heron wades in grey water today"] == VALUE
        assert got[kept.content.raw]["a\x00b"] == "v"


def test_an_unlinked_note_gets_a_nul_by_an_update(pg_url: str) -> None:
    """Step 33's trigger read the new version's links on every metadata update: an update
    giving any note a NUL was refused, linked or not."""
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        rec = mem.add(ME, "the heron wades", metadata={"k": "xy"})
        mem.add(ME, "a kingfisher dives", metadata={"k": "xy"})
        done = mem.update(ME, rec.id, expected_version=rec.version, metadata=KEY)
        assert done.metadata == KEY and done.relations == ()
        for key, value in KEY.items():
            listed = mem.list(ME, filters={"metadata": {key: {"in": [value]}}})
            assert [r.id for r in listed] == [rec.id]
