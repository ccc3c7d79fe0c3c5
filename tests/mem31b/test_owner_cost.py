"""One add and one search by an owner on memory:// cost a walk of every entry of the store
(all tenants and users) and a rebuild of the owner's BM25 index and vector matrix from
scratch (the owner's entries found by that walk): 18,251 entries walked per add+search at
100 notes of the owner beside 9,000 of nine other users, 20,051 at 1,000. Each write now
updates the owner's entries, BM25 statistics and vector rows for the records it touched
(store/memory.py, mem31b).

Counted, not timed (tests/mem31b/cost.py): the entries of the store walked, and the entries
of the owner handed to an index build, by each add and search, at 100 and 1,000 notes of
the owner: equal now (none), grown with the store before (fails before)."""

from __future__ import annotations

from typing import Any

from mem31b.cost import add_then_search, filled, search
from memstrata.store.memory import InMemoryStore


def _counting_builds(store: InMemoryStore) -> list[int]:
    """The owner's entries handed to a build (``_own``: what an index is built from)."""
    handed = [0]
    own = getattr(store, "_own", None)
    if own is not None:

        def counted(tenant: str, user: str) -> Any:
            found = own(tenant, user)
            handed[0] += len(found)
            return found

        store._own = counted  # type: ignore[method-assign]
    return handed


def test_an_owners_add_and_search_walk_no_more_entries_for_a_longer_history() -> None:
    walked = []
    for n in (100, 1000):
        store = filled(n, others=200)
        handed = _counting_builds(store)
        steps = [add_then_search(store, 30_000_000 + k) for k in range(5)]
        walked.append((steps, handed[0]))
    assert walked[0] == walked[1], walked
    assert walked[0] == ([0] * 5, 0), walked  # no walk of the store, no index built again


def test_the_searches_after_the_adds_find_what_was_added() -> None:
    store = filled(100, others=50)
    add_then_search(store, 30_000_000)
    lexical, dense = search(store, 30_000_000)
    assert dense[0].id == "u0-30000000"  # its own vector is the query: the best score
    assert lexical and all(c.id.startswith("u0-") for c in lexical)
