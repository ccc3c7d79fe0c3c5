"""A PostgreSQL row whose tags hold a NUL, written before session 20 refused such tags.

The tags column is the record's JSON list as text; ``"\\u0000"`` in it is six ASCII
characters, which PostgreSQL's ``text`` holds, but ``::json`` cannot read it out ("unsupported
Unicode escape sequence"). Before session 21 every tag-filtered list and search of that user
then failed with a ``StoreError``, and so did ``set_importance_by_tag``; the row itself stays
as it was written (nothing is rewritten behind the user's back)."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from memstrata import Filters, Memory, Scope
from servers import postgres as pg_server

ALICE = Scope("acme", "alice", session="s1")
HOME = Filters(tags_any=frozenset({"home"}))


@pytest.fixture
def mem(pg_url: str) -> Iterator[Memory]:
    m = Memory(pg_url, embedder="hashing", background=False)
    yield m
    m.close()


def _legacy_tags(pg_url: str, record_id: str, tags_json: str) -> None:
    """Write ``tags_json`` into the record's row as the store of session 19 could."""
    (schema,) = parse_qs(urlsplit(pg_url).query)["schema"]
    with psycopg.connect(pg_server().admin_url, autocommit=True) as conn:
        n = conn.execute(
            f'UPDATE "{schema}".records SET tags = %s WHERE id = %s', (tags_json, record_id)
        ).rowcount
    assert n == 1


def test_tag_filters_read_past_a_legacy_nul_tag(mem: Memory, pg_url: str) -> None:
    lisbon = mem.add(ALICE, "I live in Lisbon", tags=["home"])
    shed = mem.add(ALICE, "the shed key is under the pot", tags=["home", "shed"])
    other = mem.add(ALICE, "the car is blue", tags=["car"])
    _legacy_tags(pg_url, shed.id, '["home", "sh\\u0000ed"]')

    found = mem.list(ALICE.user_scope, filters=HOME)  # a StoreError before
    assert {r.id for r in found} == {lisbon.id, shed.id}
    assert {r.id for r in mem.list(ALICE.user_scope, filters={"tags_all": ["home"]})} == {
        lisbon.id,
        shed.id,
    }
    assert [r.id for r in mem.list(ALICE.user_scope, filters={"tags": ["car"]})] == [other.id]
    hits = mem.search(ALICE.user_scope, "shed key", filters=HOME)
    assert shed.id in {h.record.id for h in hits}
    assert {r.id for r in mem.set_importance_by_tag(ALICE.user_scope, "home", 0.9)} == {
        lisbon.id,
        shed.id,
    }
    # the row keeps what was written: the NUL is read back as it was stored
    assert "sh\x00ed" in mem.get(ALICE, shed.id).tags


def test_a_tag_spelled_like_the_escape_is_not_taken_for_it(mem: Memory, pg_url: str) -> None:
    """Only a real ``\\u0000`` escape is read past; a tag holding a backslash and "u0000"
    as characters (``"\\\\u0000"`` in the JSON) is compared as it is."""
    literal = mem.add(ALICE, "a literal escape", tags=["a\\u0000b"])
    legacy = mem.add(ALICE, "a legacy NUL", tags=["x"])
    _legacy_tags(pg_url, legacy.id, '["a\\u0000b"]')
    found = mem.list(ALICE.user_scope, filters={"tags": ["a\\u0000b"]})
    assert [r.id for r in found] == [literal.id]


def test_another_callers_read_past_a_legacy_nul_user(mem: Memory, pg_url: str) -> None:
    """The access column is JSON text too: a NUL in ``allowed_users`` (stored before
    session 20 refused it) failed every read of the user by another caller."""
    shared = mem.add(ALICE, "shared with bob")
    mem.set_access(ALICE, shared.id, visibility="shared", allowed_users=["bob"])
    odd = mem.add(ALICE, "shared with a legacy id")
    mem.set_access(ALICE, odd.id, visibility="shared", allowed_users=["carol"])
    (schema,) = parse_qs(urlsplit(pg_url).query)["schema"]
    with psycopg.connect(pg_server().admin_url, autocommit=True) as conn:
        conn.execute(
            f"UPDATE \"{schema}\".records SET access = replace(access, 'carol', 'ca\\u0000rol') "
            "WHERE id = %s",
            (odd.id,),
        )
    bob = Scope("acme", "alice", caller="bob")
    assert [r.id for r in mem.list(bob)] == [shared.id]  # a StoreError before
