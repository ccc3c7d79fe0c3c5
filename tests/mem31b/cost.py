"""What one add and one search of an owner cost on memory:// (mem31b): the helpers of
``test_owner_cost.py`` and of ``measure_owner.py`` (run by hand).

A store holds 10 users of one tenant: the owner ``u0`` with ``n`` notes and nine others
with ``others`` notes each, every note with a vector. One step is an add of a note by the
owner followed by the owner's lexical and vector search. Entries are counted by handing
the store a dict of its entries that counts every entry a walk of it yields (a whole-store
scan counts every record of the store, a look-up by key counts none), and the rows handed
to an index build (a ``bm25s`` index or a stacked matrix) are counted too."""

from __future__ import annotations

from typing import Any

import numpy as np

from memory_walks import CountingDict, note
from memstrata.filters import Filters
from memstrata.scope import Scope
from memstrata.search.tokenize import tokenize
from memstrata.store import RecordWrite
from memstrata.store.memory import InMemoryStore

OWNER = Scope("acme", "u0")
WORDS = "harbour river stone lantern orchard copper violet meadow".split()
DIMS = 64


def vector(i: int) -> np.ndarray:
    return np.random.default_rng(i).standard_normal(DIMS).astype(np.float32)


def write(i: int, user: str = "u0") -> RecordWrite:
    r = note(i, user, f"{user}-{i:07d}", WORDS, embedding_dims=DIMS)
    return RecordWrite(r, vector(i), tuple(tokenize(r.text)))


def filled(n: int, others: int = 1000) -> InMemoryStore:
    """The owner's ``n`` notes and nine other users' ``others`` each, the entries counted
    (:class:`CountingDict`), searched once by the owner."""
    store = InMemoryStore()
    store._entries = CountingDict()
    for u in range(10):
        count = n if u == 0 else others
        for start in range(0, count, 500):
            store.insert([write(i, f"u{u}") for i in range(start, min(count, start + 500))])
    search(store, 0)
    return store


def search(store: InMemoryStore, i: int) -> tuple[list[Any], list[Any]]:
    lexical = store.lexical_search(OWNER, ["harbour", "lantern"], 10, Filters())
    dense = store.vector_search(OWNER, vector(i), 10, Filters())
    return lexical, dense


def add_then_search(store: InMemoryStore, i: int) -> int:
    """Entries walked by one add of the owner and the owner's searches."""
    entries = store._entries
    assert isinstance(entries, CountingDict)
    before = entries.walked
    store.insert([write(i)])
    search(store, i)
    return entries.walked - before
