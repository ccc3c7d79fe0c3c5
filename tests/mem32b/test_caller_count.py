"""A caller's ``count`` on memory:// walks the caller's kept order (what it may read, in
list order; store/memory_shared.py ``CallerOrder``) between the filters' time bounds, or
looks ``filters.ids`` up by id, with the counts of the walk of every shared record of the
owner it was (tests/mem32b/oracle.py)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.mem32.test_cost import CAROL, T0, _write

from memstrata.filters import Filters
from memstrata.records import AccessControl, MemoryRecord, RecordType, Visibility
from memstrata.scope import Scope
from memstrata.store.memory import InMemoryStore

from .oracle import walked_count

DAVE = AccessControl(Visibility.SHARED, allowed_users=("dave",))


def _count_checked(others: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """Records carol's counts look at (``visible_in``): bob's 20 notes shared with her
    beside ``others`` of his shared with dave; a count of all, of a time range, of ids."""
    store = InMemoryStore()
    store.insert([_write(i, "bob", access=DAVE) for i in range(others)])
    store.insert([_write(others + i, "bob", access=CAROL) for i in range(20)])
    carol = Scope("t", "bob").as_caller("carol")
    store.count(carol, Filters())  # what the caller may read, gathered once
    seen = [0]
    visible_in = MemoryRecord.visible_in

    def counted(self: MemoryRecord, scope: Scope) -> bool:
        seen[0] += 1
        return visible_in(self, scope)

    since = Filters(observed_after=T0 + timedelta(seconds=others + 15))
    ids = Filters(ids=frozenset({f"bob-{others}", f"bob-{others + 1}", "bob-0", "nobody"}))
    with monkeypatch.context() as m:
        m.setattr(MemoryRecord, "visible_in", counted)
        assert store.count(carol, Filters()) == 20
        assert store.count(carol, since) == 5
        assert store.count(carol, ids) == 2
    return seen[0]


def test_a_callers_count_looks_at_the_same_beside_1000_and_10000_records(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Before (every shared record of the owner): 3,060 vs 30,060; now 27 and 27.
    assert _count_checked(1_000, monkeypatch) == _count_checked(10_000, monkeypatch) == 27


ACCESS = [
    CAROL,
    DAVE,
    AccessControl(Visibility.SHARED, allowed_users=("carol", "dave")),
    AccessControl(Visibility.SHARED, allowed_roles=("staff",)),
    AccessControl(Visibility.PUBLIC),
    AccessControl(Visibility.PRIVATE),
]
record_st = st.fixed_dictionaries(
    {
        "at": st.integers(0, 20),
        "access": st.sampled_from(ACCESS),
        "type": st.sampled_from([RecordType.NOTE, RecordType.FACT]),
        "superseded": st.booleans(),
        "session": st.sampled_from([None, "s1", "s2"]),
    }
)
when_st = st.integers(0, 21).map(lambda s: T0 + timedelta(seconds=s))
id_st = st.integers(0, 30).map(lambda i: f"bob-{i}")
filters_st = st.builds(
    Filters,
    types=st.one_of(st.none(), st.just(frozenset({RecordType.FACT}))),
    include_superseded=st.booleans(),
    observed_after=st.one_of(st.none(), when_st),
    observed_before=st.one_of(st.none(), when_st),
    ids=st.one_of(st.none(), st.frozensets(id_st, max_size=5)),
)
caller_st = st.tuples(
    st.sampled_from(["carol", "dave", "erin"]),
    st.sampled_from([frozenset(), frozenset({"staff"})]),
    st.sampled_from([None, "s1"]),
)


def _bob(i: int, spec: dict[str, Any]) -> Any:
    w = _write(i, "bob", access=spec["access"], type=spec["type"], session=spec["session"])
    r = w.record
    when = T0 + timedelta(seconds=spec["at"])
    r = replace(r, observed_at=when, superseded_by="bob-x" if spec["superseded"] else None)
    return type(w)(r, w.vector, w.terms)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("insert"), st.lists(record_st, min_size=1, max_size=4)),
            st.tuples(st.just("purge"), st.integers(0, 30)),
            st.tuples(st.just("count"), caller_st, filters_st),
        ),
        max_size=20,
    )
)
def test_a_callers_count_as_the_walk_of_every_shared_record(steps: list[Any]) -> None:
    store, n = InMemoryStore(), 0
    for step in steps:
        if step[0] == "insert":
            store.insert([_bob(n + i, spec) for i, spec in enumerate(step[1])])
            n += len(step[1])
        elif step[0] == "purge":
            store.purge(Scope("t", "bob"), [f"bob-{step[1]}"])
        else:
            (caller, roles, session), filters = step[1], step[2]
            scope = Scope("t", "bob", session=session).as_caller(caller, roles)
            assert store.count(scope, filters) == walked_count(store, scope, filters)
