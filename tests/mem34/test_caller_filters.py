"""A caller's ``count`` and pages on memory:// filtered by metadata, importance or
superseded walk the lanes those filters name (``CallerOrder.lanes``: the current records',
importance's tenths, a metadata key's and a key's scalar value's; mem34), with the results
of main's walk of the caller's whole kept order (tests/mem33/oracle.py)."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.mem32.test_cost import CAROL, T0, _write
from tests.mem33.oracle import old_after, old_count, old_list
from tests.mem33.test_caller_lanes import ACCESS, TYPES, caller_st, when_st

from memstrata.filters import Filters
from memstrata.records import RecordType
from memstrata.scope import Scope
from memstrata.store import memory_shared
from memstrata.store.base import RecordWrite
from memstrata.store.memory import InMemoryStore

FACT = RecordType.FACT


def _walked(others: int) -> list[int]:
    """Records carol's counts walk: bob's 20 current facts of importance 0.9 with
    metadata ``{"project": "x", "n": 1}`` beside ``others`` of his superseded notes of
    importance 0.5 with metadata ``{"project": "y"}``, all shared with her."""
    store = InMemoryStore()
    y, x = {"project": "y"}, {"project": "x", "n": 1}
    store.insert(
        [
            _write(i, "bob", access=CAROL, importance=0.5, superseded_by="bob-x", metadata=y)
            for i in range(others)
        ]
    )
    store.insert(
        [
            _write(others + i, "bob", access=CAROL, type=FACT, importance=0.9, metadata=x)
            for i in range(20)
        ]
    )
    carol = Scope("t", "bob").as_caller("carol")
    store.count(carol, Filters(include_superseded=True))  # what she may read, once
    every: dict[str, Any] = {"include_superseded": True}
    counts = [
        Filters(),  # superseded ones left out (the default)
        Filters(min_importance=0.8, **every),
        Filters(metadata=Filters.parse({"metadata": {"project": "x"}}).metadata, **every),
        Filters(metadata=Filters.parse({"metadata": {"project": {"in": ["x", "z"]}}}).metadata),
        Filters(metadata=Filters.parse({"metadata": {"n": {"gt": 0}}}).metadata, **every),
    ]
    walked = []
    for f in counts:
        before = store.walked
        assert store.count(carol, f) == 20
        walked.append(store.walked - before)
    return walked


def test_a_callers_counts_by_metadata_importance_superseded_walk_their_matches() -> None:
    # Before (the caller's whole order): 1,020 vs 10,020 walked by each count; now the
    # 20 records of the narrowest lane at both sizes.
    small, large = _walked(1_000), _walked(10_000)
    assert small == large
    assert max(small) <= 25


VALUES = [1, True, "a", 2, None, "1", [1], {"a": 1}]
record_st = st.fixed_dictionaries(
    {
        "at": st.integers(0, 12),
        "access": st.sampled_from([CAROL, CAROL, *ACCESS]),
        "type": st.sampled_from(TYPES),
        "session": st.sampled_from([None, "s1"]),
        "tags": st.lists(st.sampled_from(["a", "b"]), max_size=2),
        "importance": st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.55, 0.7, 0.99, 1.0]),
        "superseded": st.booleans(),
        "metadata": st.dictionaries(
            st.sampled_from(["k", "k", "m"]), st.sampled_from(VALUES), max_size=2
        ),
    }
)
condition_st = st.tuples(
    st.sampled_from(["k", "m"]),
    st.sampled_from(["eq", "eq", "in", "in", "ne", "contains", "gt", "lt"]),
    st.sampled_from(VALUES),
    st.lists(st.sampled_from(VALUES[:6]), min_size=1, max_size=3),
)
mixed_st = st.builds(
    lambda conditions, **kw: Filters(metadata=_conditions(conditions), **kw),
    st.lists(condition_st, max_size=2),
    types=st.one_of(st.none(), st.frozensets(st.sampled_from(TYPES), max_size=2)),
    tags_any=st.one_of(st.none(), st.frozensets(st.sampled_from(["a", "z"]), max_size=1)),
    min_importance=st.one_of(st.none(), st.sampled_from([0.0, 0.3, 0.5, 0.55, 0.7, 1.0])),
    include_superseded=st.booleans(),
    valid_at=st.one_of(st.none(), when_st),
    observed_after=st.one_of(st.none(), when_st),
)
filters_st = st.one_of(  # one filter of those with new lanes, alone, as often as mixed ones
    mixed_st,
    st.builds(
        lambda conditions, every: Filters(
            metadata=_conditions(conditions), include_superseded=every
        ),
        st.lists(condition_st, min_size=1, max_size=2),
        st.booleans(),
    ),
    st.builds(
        lambda m: Filters(min_importance=m, include_superseded=True),
        st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.55, 0.7, 0.99, 1.0]),
    ),
    st.builds(Filters, include_superseded=st.booleans(), valid_at=st.none() | when_st),
)


def _conditions(specs: list[tuple[str, str, Any, list[Any]]]) -> Any:
    spec: dict[str, Any] = {}
    for key, op, value, values in specs:
        spec.setdefault(key, {})[op] = values if op == "in" else value
    return Filters.parse({"metadata": spec}).metadata


def _record(i: int, spec: dict[str, Any]) -> Any:
    r = _write(i, "bob").record
    return replace(
        r,
        type=spec["type"],
        access=spec["access"],
        session=spec["session"],
        tags=tuple(spec["tags"]),
        importance=spec["importance"],
        observed_at=T0 + timedelta(seconds=spec["at"]),
        superseded_by="bob-x" if spec["superseded"] else None,
        metadata=spec["metadata"],
    )


class _TakenBack(Exception):
    pass


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("insert"), st.lists(record_st, min_size=1, max_size=6)),
            st.tuples(
                st.just("replace"), st.integers(0, 8), record_st, st.booleans(), st.booleans()
            ),
            st.tuples(st.just("purge"), st.integers(0, 20)),
            st.tuples(st.just("read"), caller_st, filters_st, st.integers(0, 2)),
            st.tuples(
                st.just("read"), st.just(("carol", frozenset(), None)), filters_st, st.just(0)
            ),
        ),
        max_size=20,
    )
)
def test_filtered_counts_and_pages_as_the_walk_of_the_whole_order(steps: list[Any]) -> None:
    parts = memory_shared.META_PARTS
    memory_shared.META_PARTS = 3  # values of a key share lanes (as beside many values)
    try:
        _steps(steps)
    finally:
        memory_shared.META_PARTS = parts


def _steps(steps: list[Any]) -> None:
    store, n, owner = InMemoryStore(), 0, Scope("t", "bob")
    for step in steps:
        if step[0] == "insert":
            store.insert(
                [RecordWrite(_record(n + i, spec), None, ()) for i, spec in enumerate(step[1])]
            )
            n += len(step[1])
        elif step[0] == "replace":  # importance, metadata, superseded... changed
            _, i, spec, taken_back, same_time = step
            if i >= n or not store.list(
                owner, Filters(ids=frozenset({f"bob-{i}"}), include_superseded=True)
            ):
                continue
            held = store.get(owner, f"bob-{i}")
            new = replace(_record(i, spec), version=held.version + 1)
            if same_time:  # its place kept: only its lanes change
                new = replace(new, observed_at=held.observed_at)
            with (
                pytest.raises(_TakenBack) if taken_back else nullcontext(),
                store.transaction() as tx,
            ):
                tx.replace(owner, RecordWrite(new, None, ()), expected_version=held.version)
                if taken_back:
                    raise _TakenBack
        elif step[0] == "purge":
            store.purge(owner, [f"bob-{step[1]}"])
        else:
            (caller, roles, session), f, offset = step[1], step[2], step[3]
            scope = Scope("t", "bob", session=session).as_caller(caller, roles)
            assert store.count(scope, f) == old_count(store, scope, f)
            for newest in (True, False):
                page = [
                    r.id for r in store.list(scope, f, limit=3, offset=offset, newest_first=newest)
                ]
                assert page == old_list(store, scope, f, 3, offset, newest)
                whole = old_list(store, scope, f, 100, 0, newest)
                if whole:
                    got = store.list_after(scope, f, whole[0], limit=2, newest_first=newest)
                    assert [r.id for r in got] == old_after(store, scope, f, whole[0], 2, newest)
            pages = [[r.id for r in p] for p in store.list_pages(scope, f, batch_size=100)]
            assert sum(pages, []) == old_list(store, scope, f, 100, 0, False)
    # the lanes hold what lanes gathered afresh would
    shared = store._shared_of.get(("t", "bob"))
    for order in shared.orders.values() if shared is not None else ():
        fresh = type(order)(order.readable, store._shared("t", "bob"))
        assert (order.places, order.lanes, order.filed) == (fresh.places, fresh.lanes, fresh.filed)


@pytest.mark.parametrize("parts", [1, 3, 64])
def test_each_metadata_condition_as_the_walk(parts: int) -> None:
    # Every operator over every value held, with the values sharing parts (1, 3) or not.
    was = memory_shared.META_PARTS
    memory_shared.META_PARTS = parts
    try:
        store, owner = InMemoryStore(), Scope("t", "bob")
        base = {
            "at": 1,
            "access": CAROL,
            "type": FACT,
            "session": None,
            "tags": [],
            "importance": 0.5,
            "superseded": False,
        }
        held = [{"k": v} for v in VALUES] + [{}, {"m": 1}]
        store.insert(
            [
                RecordWrite(_record(i, {**base, "at": i, "metadata": m}), None, ())
                for i, m in enumerate(held)
            ]
        )
        carol = owner.as_caller("carol")
        for op in ("eq", "ne", "in", "contains", "gt", "lt"):
            for value in VALUES:
                for values in ([value], [value, "a"], [2, None, "1"]):
                    f = Filters(metadata=_conditions([("k", op, value, values)]))
                    assert store.count(carol, f) == old_count(store, carol, f), (op, value)
                    got = [r.id for r in store.list(carol, f, limit=100)]
                    assert got == old_list(store, carol, f, 100, 0, True), (op, value)
    finally:
        memory_shared.META_PARTS = was
