"""The public part's rare path: a query term FTS5's tokenizer splits into a phrase of several
tokens (``harbour-ferri``, stemmed as stored, given to the store as one term) counts the
phrase's rows from the public docs read whole. A caller who may read everything of a
one-user tenant still gets the owner's hits and scores, on both SQL stores, with a note
shared by name and one by role beside the public ones. A check of the new path (it passes
before too)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata import Memory, Scope
from memstrata.filters import Filters

SOLO = Scope("solo-tenant", "solo")


@pytest.fixture(params=["sqlite", "postgresql"])
def sql_mem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    url = (
        f"sqlite:///{tmp_path / 'ph.db'}"
        if request.param == "sqlite"
        else str(request.getfixturevalue("pg_url"))
    )
    m = Memory(url, embedder="hashing", background=False)
    yield m
    m.close()


def test_a_phrase_query_ranks_as_the_owners(sql_mem: Memory) -> None:
    for text in [
        "harbour ferry pier",
        "ferry harbour pier pier",
        "the harbour ferry leaves the harbour",
        "pier only",
        "nothing here",
    ]:
        sql_mem.add(SOLO, text, visibility="public")
    named = sql_mem.add(SOLO, "harbour ferry by name")
    sql_mem.set_access(SOLO, named.id, visibility="shared", allowed_users=["carol"])
    role = sql_mem.add(SOLO, "a harbour ferry for editors")
    sql_mem.set_access(SOLO, role.id, visibility="shared", allowed_roles=["editor"])
    caller = SOLO.as_caller("carol", {"editor"})
    store = sql_mem.store
    for terms in (["harbour-ferri"], ["harbour-ferri", "pier"], ["pier"], ["harbour", "ferri"]):
        owner = [(c.id, c.score) for c in store.lexical_search(SOLO, terms, 10, Filters())]
        assert owner
        assert [(c.id, c.score) for c in store.lexical_search(caller, terms, 10, Filters())] == (
            owner
        ), terms
