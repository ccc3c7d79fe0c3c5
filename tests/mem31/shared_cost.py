"""What one write of an owner costs a caller's next read on memory:// (mem31): the helpers
of ``test_shared_cost.py`` and of ``measure_shared.py`` (run by hand).

An owner ``bob`` holds ``n`` notes, one in ten shared (in turn public, naming ``carol``,
naming the role ``editor``); ``carol`` (and ``erin`` with the role) read them. Rows are
counted by handing the store a dict of its entries that counts every entry a walk of it
yields (``values``, ``items``, ``keys``, iteration): a whole-store scan counts every record
of the store, a look-up by key counts none."""

from __future__ import annotations

from typing import Any

from memory_walks import CountingDict, note
from memstrata.filters import Filters
from memstrata.records import AccessControl, Visibility
from memstrata.scope import Scope
from memstrata.search.tokenize import tokenize
from memstrata.store import RecordWrite
from memstrata.store.memory import InMemoryStore

BOB = Scope("acme", "bob")
CAROL = BOB.as_caller("carol")
ERIN = BOB.as_caller("erin", {"editor"})
WORDS = "harbour river stone lantern orchard copper violet meadow".split()


def access(i: int, every: int = 10) -> AccessControl:
    """One note in ``every`` shared: in turn public, naming carol, naming the role editor."""
    if i % every:
        return AccessControl()
    how = (i // every) % 3
    if how == 0:
        return AccessControl(Visibility.PUBLIC)
    if how == 1:
        return AccessControl(Visibility.SHARED, allowed_users=("carol",))
    return AccessControl(Visibility.SHARED, allowed_roles=("editor",))


def write(
    i: int, ac: AccessControl | None = None, user: str = "bob", every: int = 10
) -> RecordWrite:
    r = note(i, user, f"{user}{i:06d}", WORDS, access=access(i, every) if ac is None else ac)
    return RecordWrite(r, None, tuple(tokenize(r.text)))


def filled(n: int, every: int = 10) -> InMemoryStore:
    """A store whose owner holds ``n`` notes, one in ``every`` shared (and another user as
    many, unshared), its entries counted (:class:`CountingDict`), read once by each
    caller."""
    store = InMemoryStore()
    store._entries = CountingDict()
    for start in range(0, n, 500):
        store.insert([write(i, every=every) for i in range(start, min(n, start + 500))])
        store.insert([write(i, AccessControl(), "dan") for i in range(start, min(n, start + 500))])
    reads(store)
    return store


def reads(store: InMemoryStore) -> list[Any]:
    """A caller's page, count and lexical search, for each of the two callers."""
    out: list[Any] = []
    for who in (CAROL, ERIN):
        out.append([r.id for r in store.list(who, Filters(), limit=10)])
        out.append(store.count(who, Filters()))
        out.append(store.lexical_search(who, ["harbour", "lantern"], 10, Filters()))
    return out


def one_add_then_reads(store: InMemoryStore, i: int, shared: bool) -> int:
    """Rows walked by one add of the owner (public, or private) and each caller's reads."""
    entries = store._entries
    assert isinstance(entries, CountingDict)
    before = entries.walked
    store.insert([write(i, AccessControl(Visibility.PUBLIC) if shared else AccessControl())])
    reads(store)
    return entries.walked - before
