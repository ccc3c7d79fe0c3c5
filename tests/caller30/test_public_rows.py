"""The rows of the index of readers that name the owner's public records (SQLite,
``store/sqlite/roles.py``'s ``PUBLIC``, caller30) are exactly the records whose current
``visibility`` is public, after every kind of write: an insert, a ``set_access`` to public
and back, an edit, a delete and a restore, a load of a dump (``copy_store``), a purge of a
record and of the owner, and the upgrade of a file written before them (schema 19 fills
them); a caller's ``list`` reads the same records through them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata import Memory, Scope
from memstrata.store.migrate.copy import copy_store
from memstrata.store.sqlite.roles import PUBLIC, public_reader

BOB = Scope("acme", "bob")
DAVE = Scope("acme", "dave")
CAROL = BOB.as_caller("carol")


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "rows.db"


@pytest.fixture
def lite(path: Path) -> Iterator[Memory]:
    m = Memory(f"sqlite:///{path}", embedder="hashing", background=False)
    yield m
    m.close()


def _check(path: Path) -> set[tuple[str, bytes, str, str]]:
    """The public rows ``rr`` holds, checked equal to those of the records' current rows
    (each in its listing's place: the owner, the time, the seq)."""
    with sqlite3.connect(path) as conn:
        held = {
            (str(t), bytes(r), str(u), str(i))
            for t, r, u, i in conn.execute("SELECT t, r, u, i FROM rr WHERE typeof(r) = 'blob'")
            if bytes(r).startswith(PUBLIC)
        }
        public = {
            (str(t), public_reader(str(u), str(at), int(seq)), str(u), str(i))
            for t, u, i, at, seq in conn.execute(
                "SELECT tenant, user, id, observed_at, seq FROM records WHERE visibility = 'public'"
            )
        }
    assert held == public
    return held


def _listed(mem: Memory, scope: Scope = CAROL) -> set[str]:
    return {r.id for r in mem.list(scope)}


def test_every_write_keeps_the_public_rows(lite: Memory, path: Path) -> None:
    a = lite.add(BOB, "harbour alpha", visibility="public").id
    b = lite.add(BOB, "harbour beta").id
    lite.add(BOB, "harbour private")
    assert len(_check(path)) == 1
    assert _listed(lite) == {a}
    lite.set_access(BOB, b, visibility="public")
    assert len(_check(path)) == 2
    assert _listed(lite) == {a, b}
    lite.set_access(BOB, a, visibility="shared", allowed_roles=["editor"])
    assert len(_check(path)) == 1
    assert _listed(lite) == {b}
    assert _listed(lite, BOB.as_caller("erin", {"editor"})) == {a, b}
    version = lite.get(BOB, b).version
    lite.update(BOB, b, expected_version=version, content="harbour beta edited")
    _check(path)
    assert _listed(lite) == {b}
    lite.delete(BOB, b)
    _check(path)  # a deleted record's row stays (the caller's rule drops it)
    assert _listed(lite) == set()
    lite.restore(BOB, b)
    _check(path)
    assert _listed(lite) == {b}
    lite.purge(BOB, [b])
    assert _check(path) == set()
    assert _listed(lite) == set()


def test_a_purge_of_the_owner_leaves_no_public_row(lite: Memory, path: Path) -> None:
    for scope in (BOB, DAVE):
        lite.add(scope, "harbour public", visibility="public")
    lite.purge(BOB)
    assert {u for _, _, u, _ in _check(path)} == {"dave"}


def test_a_copy_and_an_upgrade_keep_the_public_rows(
    lite: Memory, path: Path, tmp_path: Path
) -> None:
    ids = [
        lite.add(BOB, f"harbour note {i}", visibility=("public" if i % 2 else None)).id
        for i in range(6)
    ]
    listed = [r.id for r in lite.list(CAROL)]
    assert set(listed) == set(ids[1::2])
    lite.close()
    copy = tmp_path / "copy.db"
    assert copy_store(f"sqlite:///{path}", f"sqlite:///{copy}").ok
    assert _check(copy) == _check(path)
    # the file as schema 18 wrote it: no public rows
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM rr WHERE substr(r, 1, ?) = ?", (len(PUBLIC), PUBLIC))
        conn.execute("PRAGMA user_version = 18")
    again = Memory(f"sqlite:///{path}", embedder="hashing", background=False)
    try:
        assert len(_check(path)) == 3
        assert [r.id for r in again.list(CAROL)] == listed
    finally:
        again.close()
