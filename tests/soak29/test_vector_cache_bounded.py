"""The stores' vector caches are bounded by the memory they hold, not by vectors (session 29).

A user's entry counts against ``vector_cache_rows`` by the rows its storage allocated (64 at
least, :attr:`UserVectors.held_rows`) and one for the entry itself. Before, it counted its
vectors: a user with none counted 0 and was never dropped (a server searching for millions
of users with no memories kept an entry for each), and a user with one vector held 64 rows
(64 KiB at 256 dims) for 1 counted, so a bound of 500,000 rows let a process hold 32 GB.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata import Memory, Scope

BOUND = 1_000


def _held(mem: Memory) -> tuple[int, int]:
    """(users held, rows allocated by their storage) of the memory's vector cache."""
    users = mem.store._vectors._users  # type: ignore[attr-defined]
    states = [u[0] if isinstance(u, tuple) else u for u in users.values()]
    return len(states), sum(s.cols.capacity for s in states if s.cols is not None)


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_users_with_no_vector_do_not_pile_up(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = (
        request.getfixturevalue("pg_url") if kind == "postgresql" else f"sqlite:///{tmp_path}/m.db"
    )
    with Memory(url, embedder="hashing", background=False) as mem:
        mem.store._vectors.max_rows = BOUND  # type: ignore[attr-defined]
        mem.add(Scope("acme", "someone"), "a note, so the store has vectors of these dims")
        for i in range(3 * BOUND if kind == "sqlite" else BOUND + 200):
            mem.search(Scope("acme", f"nobody-{i}"), "bees")
        users, _ = _held(mem)
        assert users <= BOUND


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_small_users_are_counted_by_the_rows_their_storage_holds(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = (
        request.getfixturevalue("pg_url") if kind == "postgresql" else f"sqlite:///{tmp_path}/m.db"
    )
    with Memory(url, embedder="hashing", background=False) as mem:
        mem.store._vectors.max_rows = BOUND  # type: ignore[attr-defined]
        for i in range(60):
            scope = Scope("acme", f"small-{i}")
            mem.add(scope, f"user {i} keeps bees")
            assert mem.search(scope, "bees")
        _, rows = _held(mem)
        assert rows <= BOUND
        # the most recent users are still held and found
        assert mem.search(Scope("acme", "small-59"), "bees")
