"""A role caller gets the same hits and scores as before: generated memories (notes private,
public, shared by name, with roles, with both; access changed and records deleted after),
searched by callers with and without roles on SQLite, through the store's new look-up of
role-shared records and through the scan of the owner's rows it replaced (caller28's
statement, kept here and put in its place): equal ids and scores, bit for bit."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import Memory, Scope
from memstrata.filters import Filters
from memstrata.store.sqlite import lexical
from memstrata.store.sqlite.store import SQLiteStore

BOB = Scope("acme", "bob")
CALLERS = [
    BOB.as_caller("carol"),
    BOB.as_caller("carol", {"editor"}),
    BOB.as_caller("erin", {"viewer", "admin"}),
    BOB.as_caller("vic", {"editor", "viewer"}),
    BOB.as_caller("zed", {"admin"}),
]
WORDS = ["harbour", "ferry", "pier", "alpha", "beta", "w1"]
ROLES = ["editor", "viewer", "admin"]

# caller28's statement: the owner's records whose access lists roles, by a scan of his rows
# (``coalesce`` takes the arguments of the new statement's look-up and does nothing)
_OLD_ROLED = (
    f"SELECT {lexical._DOC} FROM records r JOIN lex_docs d ON d.seq = r.seq WHERE "
    "coalesce(?, {marks}, ?) IS NOT NULL AND r.tenant = ? AND "
    "r.user = ? AND r.visibility != 'public' AND instr(r.access, '\"allowed_roles\":[]') = 0 "
    "AND NOT EXISTS (SELECT 1 FROM rr WHERE rr.t = r.tenant AND rr.r = ? AND rr.u = r.user "
    "AND rr.i = r.id) AND {readable}"
)
access = st.tuples(
    st.sampled_from(["private", "shared", "public"]),
    st.lists(st.sampled_from(["carol", "erin", "dana"]), unique=True, max_size=2),
    st.lists(st.sampled_from(ROLES), unique=True, max_size=2),
)
note = st.tuples(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5), access)
later = st.tuples(st.integers(0, 30), st.one_of(access, st.just("delete")))


def _write(mem: Memory, notes: list[Any], changes: list[Any]) -> dict[str, str]:
    """The memory's records; their ids by text."""
    ids: dict[str, str] = {}
    order: list[str] = []
    for i, (words, how) in enumerate(notes):
        text = " ".join([*words, f"n{i}"])
        rid = mem.add(BOB, text).id
        ids[rid] = text
        order.append(rid)
        _share(mem, rid, how)
    deleted: set[str] = set()
    for at, how in changes:
        rid = order[at % len(order)]
        if rid in deleted:
            continue
        if how == "delete":
            mem.delete(BOB, rid)
            deleted.add(rid)
        else:
            _share(mem, rid, how)
    return ids


def _share(mem: Memory, rid: str, how: tuple[str, list[str], list[str]]) -> None:
    visibility, users, granted = how
    if visibility == "private" and not users and not granted:
        mem.set_access(BOB, rid, visibility="private", allowed_users=[], allowed_roles=[])
        return
    vis = "shared" if visibility == "private" else visibility
    mem.set_access(BOB, rid, visibility=vis, allowed_users=users, allowed_roles=granted)


def _seen(store: SQLiteStore, scope: Scope, terms: list[str]) -> list[tuple[str, float]]:
    return [(c.id, c.score) for c in store.lexical_search(scope, terms, 50, Filters())]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.lists(note, min_size=1, max_size=12),
    st.lists(later, max_size=6),
    st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=2), min_size=1, max_size=3),
    st.sampled_from([5, 50]),
)
def test_role_callers_search_as_before(
    notes: list[Any], changes: list[Any], queries: list[list[str]], k: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        lite = Memory(f"sqlite:///{Path(tmp) / 'e.db'}", embedder="hashing", background=False)
        try:
            _write(lite, notes, changes)
            store = getattr(lite.store, "viewed", lite.store)
            assert isinstance(store, SQLiteStore)
            new = [[store.lexical_search(s, q, k, Filters()) for q in queries] for s in CALLERS]
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(lexical, "_ROLED", _OLD_ROLED)
                old = [[store.lexical_search(s, q, k, Filters()) for q in queries] for s in CALLERS]
            assert [[[(c.id, c.score) for c in hits] for hits in per] for per in new] == [
                [[(c.id, c.score) for c in hits] for hits in per] for per in old
            ]
        finally:
            lite.close()
