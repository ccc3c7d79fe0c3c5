"""A caller's ``count`` and pages on memory:// walk the narrowest lane of its kept order
(its session's, the filter's types' or tags': ``CallerOrder.lanes``, mem33), with the
results of main's walk of the caller's whole kept order (tests/mem33/oracle.py)."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.mem32.test_cost import CAROL, T0, _write

from memstrata.filters import Filters
from memstrata.records import AccessControl, RecordType, Visibility
from memstrata.scope import Scope
from memstrata.store.base import RecordWrite
from memstrata.store.memory import InMemoryStore

from .oracle import old_after, old_count, old_list

FACT, NOTE, SUMMARY = RecordType.FACT, RecordType.NOTE, RecordType.SUMMARY


def _walked(others: int) -> list[int]:
    """Records carol's counts walk: bob's 20 facts of session s1 tagged ``t1`` shared with
    her beside ``others`` of his notes of session s2 tagged ``x``, shared with her too."""
    store = InMemoryStore()
    store.insert([_write(i, "bob", access=CAROL, session="s2", tags=("x",)) for i in range(others)])
    store.insert(
        [
            _write(others + i, "bob", access=CAROL, type=FACT, session="s1", tags=("t1", "x"))
            for i in range(20)
        ]
    )
    carol = Scope("t", "bob").as_caller("carol")
    store.count(carol, Filters())  # what the caller may read, gathered once
    counts = [
        (carol, Filters(types=frozenset({FACT}))),
        (carol, Filters(types=frozenset({FACT, SUMMARY}))),
        (Scope("t", "bob", session="s1").as_caller("carol"), Filters()),
        (carol, Filters(tags_any=frozenset({"t1", "nothing"}))),
        (carol, Filters(tags_all=frozenset({"t1", "x"}))),
        (carol, Filters(types=frozenset({FACT}), observed_after=T0 + timedelta(seconds=others))),
    ]
    walked = []
    for scope, f in counts:
        before = store.walked
        assert store.count(scope, f) == 20
        walked.append(store.walked - before)
    return walked


def test_a_callers_filtered_counts_walk_the_same_beside_1000_and_10000_records() -> None:
    # Before (the caller's whole order): 1,020 vs 10,020 walked by each count; now the
    # 20 records of the narrowest lane at both sizes.
    small, large = _walked(1_000), _walked(10_000)
    assert small == large
    assert max(small) <= 25


ACCESS = [
    CAROL,
    AccessControl(Visibility.SHARED, allowed_users=("dave",)),
    AccessControl(Visibility.SHARED, allowed_roles=("staff",)),
    AccessControl(Visibility.PUBLIC),
    AccessControl(Visibility.PRIVATE),
]
TYPES = [NOTE, FACT, SUMMARY, RecordType.MESSAGE]
TAGS = ["a", "b", "c"]
record_st = st.fixed_dictionaries(
    {
        "at": st.integers(0, 12),
        "access": st.sampled_from(ACCESS),
        "type": st.sampled_from(TYPES),
        "session": st.sampled_from([None, "s1", "s2"]),
        "tags": st.lists(st.sampled_from(TAGS), max_size=3),  # repeats a tag at times
        "importance": st.sampled_from([0.2, 0.8]),
        "superseded": st.booleans(),
    }
)
when_st = st.integers(0, 13).map(lambda s: T0 + timedelta(seconds=s))
tags_st = st.one_of(st.none(), st.frozensets(st.sampled_from([*TAGS, "z"]), max_size=2))
filters_st = st.builds(
    Filters,
    types=st.one_of(st.none(), st.frozensets(st.sampled_from(TYPES), max_size=2)),
    tags_any=tags_st,
    tags_all=tags_st,
    min_importance=st.one_of(st.none(), st.just(0.5)),
    include_superseded=st.booleans(),
    observed_after=st.one_of(st.none(), when_st),
    observed_before=st.one_of(st.none(), when_st),
    ids=st.one_of(st.none(), st.frozensets(st.integers(0, 20).map(lambda i: f"bob-{i}"))),
)
caller_st = st.tuples(
    st.sampled_from(["carol", "dave"]),
    st.sampled_from([frozenset(), frozenset({"staff"})]),
    st.sampled_from([None, "s1", "s2"]),
)


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
    )


class _TakenBack(Exception):
    pass


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("insert"), st.lists(record_st, min_size=1, max_size=4)),
            st.tuples(
                st.just("replace"), st.integers(0, 8), record_st, st.booleans(), st.booleans()
            ),
            st.tuples(st.just("purge"), st.integers(0, 20)),
            st.tuples(st.just("read"), caller_st, filters_st, st.integers(0, 2)),
        ),
        max_size=20,
    )
)
def test_counts_and_pages_as_the_walk_of_the_whole_order(steps: list[Any]) -> None:
    store, n, owner = InMemoryStore(), 0, Scope("t", "bob")
    for step in steps:
        if step[0] == "insert":
            store.insert(
                [RecordWrite(_record(n + i, spec), None, ()) for i, spec in enumerate(step[1])]
            )
            n += len(step[1])
        elif step[0] == "replace":  # a record's type, tags, session, time or access changed
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
    for order in store._shared_of.get(("t", "bob"), _NoShared()).orders.values():
        fresh = type(order)(order.readable, store._shared("t", "bob"))
        assert (order.places, order.lanes, order.filed) == (fresh.places, fresh.lanes, fresh.filed)


class _NoShared:
    orders: dict[Any, Any] = {}
