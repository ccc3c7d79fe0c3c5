"""The rows of the index of readers that name a role (``store/sqlite/roles.py``) are exactly
the roles each record's current ``access`` names, after every kind of write: an insert, a
``set_access`` adding, changing and dropping roles, an edit, a delete and a restore, a
purge of a record and of the owner (no row of theirs left), a copy by ``copy_store`` and the
upgrade of a file written before them (schema 18 fills them); a role caller's search reads
the same records through them."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata import Memory, Scope
from memstrata.store.citations import CITE, LINK
from memstrata.store.migrate.copy import copy_store
from memstrata.store.sqlite.roles import MARK, PUBLIC

BOB = Scope("acme", "bob")
DAVE = Scope("acme", "dave")
EDITOR = BOB.as_caller("erin", {"editor"})

Row = tuple[str, str, str, str]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "rows.db"


@pytest.fixture
def lite(path: Path) -> Iterator[Memory]:
    m = Memory(f"sqlite:///{path}", embedder="hashing", background=False)
    yield m
    m.close()


def _rows(path: Path) -> tuple[set[Row], set[Row]]:
    """(the role rows the index holds, those the records' current access names)."""
    with sqlite3.connect(path) as conn:
        held = {
            (t, bytes(r)[len(MARK) :].decode(), u, i)
            for t, r, u, i in conn.execute("SELECT t, r, u, i FROM rr WHERE typeof(r) = 'blob'")
            # not the public rows (caller30, tests/caller30) nor the index of citations
            # and links (purge31, purge31b: store/citations.py)
            if not bytes(r).startswith((PUBLIC, CITE, LINK))
        }
        for (r,) in conn.execute("SELECT r FROM rr WHERE typeof(r) = 'blob'"):
            assert bytes(r).startswith((MARK, PUBLIC, CITE, LINK))
        named = {
            (t, str(role), u, i)
            for t, u, i, access in conn.execute("SELECT tenant, user, id, access FROM records")
            for role in json.loads(access).get("allowed_roles", ())
        }
    return held, named


def _check(path: Path) -> set[Row]:
    held, named = _rows(path)
    assert held == named
    return held


def _found(mem: Memory, scope: Scope = EDITOR) -> set[str]:
    return {h.record.id for h in mem.search(scope, "harbour", mode="lexical")}


def test_every_write_keeps_the_role_rows(lite: Memory, path: Path) -> None:
    a = lite.add(BOB, "harbour alpha").id
    b = lite.add(BOB, "harbour beta").id
    lite.add(BOB, "harbour private")
    assert _check(path) == set()
    lite.set_access(BOB, a, visibility="shared", allowed_roles=["editor", "viewer"])
    lite.set_access(BOB, b, visibility="shared", allowed_roles=["editor"])
    assert len(_check(path)) == 3
    assert _found(lite) == {a, b}
    lite.set_access(BOB, a, allowed_roles=["viewer"])  # editor dropped
    _check(path)
    assert _found(lite) == {b}
    assert _found(lite, BOB.as_caller("vic", {"viewer"})) == {a}
    version = lite.get(BOB, b).version
    lite.update(BOB, b, expected_version=version, content="harbour beta edited")
    _check(path)
    assert _found(lite) == {b}
    lite.delete(BOB, b)
    _check(path)  # a deleted record's rows stay (the caller's rule drops it)
    assert _found(lite) == set()
    lite.restore(BOB, b)
    _check(path)
    assert _found(lite) == {b}
    lite.set_access(BOB, b, visibility="public", allowed_roles=["editor"])
    _check(path)
    assert _found(lite) == {b}  # through the public part
    lite.set_access(BOB, b, visibility="private", allowed_roles=[])
    assert _check(path) == {("acme", "viewer", "bob", a)}
    assert _found(lite) == set()
    lite.purge(BOB, [a])
    assert _check(path) == set()


def test_a_purge_of_the_owner_leaves_no_role_row(lite: Memory, path: Path) -> None:
    for scope in (BOB, DAVE):
        rid = lite.add(scope, "harbour shared").id
        lite.set_access(scope, rid, visibility="shared", allowed_roles=["editor"])
    lite.purge(BOB)
    held = _check(path)
    assert {u for _, _, u, _ in held} == {"dave"}
    with sqlite3.connect(path) as conn:
        assert not conn.execute("SELECT 1 FROM rr WHERE u = 'bob'").fetchall()


def test_a_copy_and_an_upgrade_keep_the_role_rows(lite: Memory, path: Path, tmp_path: Path) -> None:
    ids = set()
    for i in range(6):
        rid = lite.add(BOB, f"harbour note {i}").id
        if i % 2:
            lite.set_access(BOB, rid, visibility="shared", allowed_roles=["editor"])
            ids.add(rid)
    seen = [(h.record.id, h.score) for h in lite.search(EDITOR, "harbour", mode="lexical")]
    assert {rid for rid, _ in seen} == ids
    lite.close()
    copy = tmp_path / "copy.db"
    assert copy_store(f"sqlite:///{path}", f"sqlite:///{copy}").ok
    assert _check(copy) == _check(path)
    # the file as schema 17 wrote it: no role rows
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM rr WHERE typeof(r) = 'blob'")
        conn.execute("PRAGMA user_version = 17")
    assert _rows(path)[0] == set()
    again = Memory(f"sqlite:///{path}", embedder="hashing", background=False)
    try:
        assert len(_check(path)) == 3
        found = [(h.record.id, h.score) for h in again.search(EDITOR, "harbour", mode="lexical")]
        assert found == seen
    finally:
        again.close()
