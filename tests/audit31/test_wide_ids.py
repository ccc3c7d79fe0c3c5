"""Ids of 256 characters that take four bytes each.

``Scope`` and record ids took up to 256 characters of anything; PostgreSQL keeps several
ids side by side in btree keys of at most 2,704 bytes (``records_session``: tenant, user,
session; ``record_readers``: tenant, reader, user, record id), so a scope of 256 emoji
or rare Chinese characters (1,024 bytes each) had every add, turn and task refused there
("PostgreSQL ... failed: index row size 3128 exceeds btree version 4 maximum 2704 for
index records_session") while SQLite and ``memory://`` stored them: one store's data could
not be migrated to the other. Session 31's audit: an id takes at most 640 bytes of UTF-8
(``validation.MAX_ID_BYTES``) on every store, and the widest ids allowed are written
everywhere, PostgreSQL included."""

from __future__ import annotations

import io
import json
import random
from collections.abc import Callable

import pytest

from memstrata import Filters, Memory, Scope, ValidationError
from memstrata.validation import check_id

MAX_ID_BYTES = 640  # validation.MAX_ID_BYTES

WIDE = "".join(map(chr, range(0x20000, 0x22000)))  # CJK Extension B: 4 bytes each


def _wide(n: int, seed: int) -> str:
    """``n`` characters of four bytes, random (so PostgreSQL cannot compress the key)."""
    r = random.Random(seed)
    return "".join(r.choice(WIDE) for _ in range(n))


@pytest.mark.parametrize("mem", ["memory", "sqlite", "postgresql"], indirect=True)
def test_the_widest_ids_are_written_on_every_store(mem: Memory) -> None:
    n = MAX_ID_BYTES // 4
    tenant, user, agent, session, reader = (_wide(n, i) for i in range(5))
    scope = Scope(tenant, user, agent=agent, session=session)
    note = mem.add(scope, "I like tea with lemon")
    mem.add_message(scope, "user", "my name is Bob and I live in Paris")
    mem.tasks.start(scope, "build a shed", ["plan", "build"])
    mem.set_access(scope, note.id, allowed_users=[reader])
    assert mem.search(scope.user_scope.as_caller(reader), "tea")
    mem.end_session(scope)
    mem.flush()
    # a record id as wide, from an import, shared with the reader: four wide ids in one key
    out = io.StringIO()
    mem.export_records(scope.user_scope, out, include_history=False)
    head, *rows, end = out.getvalue().splitlines()
    (row,) = [r for r in map(json.loads, rows) if r["record"]["id"] == note.id]
    other = Scope(tenant, _wide(n, 10))
    row["record"] |= {
        "id": _wide(n, 9),
        "user": other.user,
        "access": {"visibility": "shared", "allowed_users": [], "allowed_roles": []},
    }
    end_line = json.dumps({**json.loads(end), "count": 1})
    mem.import_records(io.StringIO("\n".join([head, json.dumps(row), end_line]) + "\n"))
    (copied,) = mem.list(other)
    assert copied.id == row["record"]["id"]
    mem.set_access(other, copied.id, allowed_users=[reader])
    mem.purge(scope.user_scope)
    assert mem.list(scope.user_scope, filters=Filters(include_deleted=True)) == []


@pytest.mark.parametrize("mem", ["memory", "sqlite", "postgresql"], indirect=True)
def test_a_wider_id_is_refused_on_every_store(mem: Memory) -> None:
    too_wide = _wide(MAX_ID_BYTES // 4 + 1, 1)  # 161 characters, 644 bytes
    with pytest.raises(ValidationError, match="1,024 bytes of UTF-8"):
        mem.add(Scope("acme", _wide(256, 2)), "a note")  # PostgreSQL's StoreError before
    builds: list[Callable[[], Scope]] = [
        lambda: Scope(too_wide, "alice"),
        lambda: Scope("acme", too_wide),
        lambda: Scope("acme", "alice", agent=too_wide),
        lambda: Scope("acme", "alice", session=too_wide),
        lambda: Scope("acme", "alice").as_caller(too_wide),
        lambda: Scope("acme", "alice").as_caller("bob", {too_wide}),
    ]
    for build in builds:
        with pytest.raises(ValidationError, match="644 bytes of UTF-8; an id may take at most"):
            build()
    alice = Scope("acme", "alice")
    note = mem.add(alice, "a note")
    with pytest.raises(ValidationError, match="644 bytes"):
        mem.set_access(alice, note.id, allowed_users=[too_wide])
    with pytest.raises(ValidationError, match="644 bytes"):
        check_id(too_wide)
    assert mem.get(alice, note.id).version == 1  # nothing written
    assert Scope("acme", "é" * 256).user == "é" * 256  # 512 bytes: as before
