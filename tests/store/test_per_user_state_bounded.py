"""A long-running process keeps per-user state for the users it serves now, not for every
user it ever served: the vector caches' per-user load locks live only while held, and the
PostgreSQL store's per-user vector counts and "index ensured" marks are bounded.

Before, each was a plain dict with one entry per user ever searched or written."""

from __future__ import annotations

import gc

import pytest

import memstrata.store.postgres.store as pg_store
from memstrata import Memory, Scope
from memstrata.bounded import RecentDict

_USERS = 30


def _serve_many_users(mem: Memory) -> None:
    for i in range(_USERS):
        scope = Scope("acme", f"user-{i}", session="s")
        mem.add(scope, f"user {i} likes tea number {i}")
        assert mem.search(scope, "tea")


def test_recent_dict_keeps_the_most_recently_set() -> None:
    d: RecentDict[str, int] = RecentDict(2)
    d["a"], d["b"] = 1, 2
    d["a"] = 3  # set again: now the most recent
    d["c"] = 4
    assert list(d.items()) == [("a", 3), ("c", 4)]
    with pytest.raises(ValueError, match="maxsize"):
        RecentDict(0)


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_vector_load_locks_do_not_outlive_their_loads(
    kind: str, request: pytest.FixtureRequest, tmp_path: object
) -> None:
    url = (
        request.getfixturevalue("pg_url") if kind == "postgresql" else f"sqlite:///{tmp_path}/m.db"
    )
    mem = Memory(url, embedder="hashing", background=False)
    try:
        _serve_many_users(mem)
        gc.collect()
        assert len(mem.store._vectors._locks) == 0  # type: ignore[attr-defined]
        # and a user searched again still answers (a fresh lock is made)
        assert mem.search(Scope("acme", "user-3", session="s"), "tea")
    finally:
        mem.close()


def test_postgres_per_user_counts_are_bounded(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pg_store, "_USERS_HELD", 8)
    mem = Memory(pg_url, embedder="hashing", background=False)
    try:
        _serve_many_users(mem)
        store = mem.store
        assert 0 < len(store._counted) <= 8  # type: ignore[attr-defined]
        assert len(store._hnsw_users) <= 8  # type: ignore[attr-defined]
        # a user whose count was dropped is counted again and still written and found
        first = Scope("acme", "user-0", session="s")
        mem.add(first, "user 0 also likes green tea")
        assert len(mem.search(first, "tea")) == 2
    finally:
        mem.close()
