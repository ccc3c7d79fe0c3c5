"""A caller with roles found the owner's role-shared records by a scan of the owner's rows
(SQLite has no index of ``access``): its search cost, and its time told, how many records
the owner kept unshared (caller29 left it). The records shared with a role are now named in
the index of readers (``store/sqlite/roles.py``), and a role caller reads those rows only.

Counted, not timed: SQLite's virtual-machine steps of the caller's store search (a progress
handler on the store's read connection) at 100 and 1,000 private notes of the owner, and at
100 and 1,000 notes shared with a role the caller lacks: they grew with the notes before
(fails before), they are equal now."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata import Memory, Scope
from memstrata.filters import Filters
from memstrata.store.sqlite.store import SQLiteStore
from sqlite_steps import sqlite_store, vm_steps

BOB = Scope("acme", "bob")
EDITOR = BOB.as_caller("erin", {"editor"})


@pytest.fixture
def lite(tmp_path: Path) -> Iterator[Memory]:
    m = Memory(f"sqlite:///{tmp_path / 'r.db'}", embedder="hashing", background=False)
    yield m
    m.close()


def _steps(store: SQLiteStore, scope: Scope, terms: list[str]) -> int:
    return vm_steps(store, lambda: store.lexical_search(scope, terms, 10, Filters()))


def _shared(mem: Memory, text: str, role: str) -> str:
    rid = mem.add(BOB, text).id
    mem.set_access(BOB, rid, visibility="shared", allowed_roles=[role])
    return rid


@pytest.mark.parametrize("kind", ["private", "another role", "by name"])
def test_a_role_callers_search_does_not_grow_with_the_owner(lite: Memory, kind: str) -> None:
    shared = {_shared(lite, f"harbour ferry note {i}", "editor") for i in range(5)}
    store = sqlite_store(lite)
    counted = []
    added = 0
    for total in (100, 1000):
        while added < total:
            text = f"harbour words only {added}"  # the word too: no index of words skips them
            if kind == "private":
                lite.add(BOB, text)
            elif kind == "another role":
                _shared(lite, text, "admin")
            else:
                rid = lite.add(BOB, f"filler words only {added}").id
                lite.set_access(BOB, rid, visibility="shared", allowed_users=["dana"])
            added += 1
        hits = store.lexical_search(EDITOR, ["harbour"], 10, Filters())
        assert {h.id for h in hits} == shared
        counted.append(_steps(store, EDITOR, ["harbour"]))
    assert counted[1] == counted[0], counted
