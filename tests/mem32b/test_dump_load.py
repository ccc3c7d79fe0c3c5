"""A dump's load into memory:// (store/memory_dump.py ``load_keys``, ``load_audit``) looks
up the held hashes and ids of what it brings, not every held row's (rows filed by hash,
memory_filed.key_row_owners; the audit log's ids), with the results of the walk it was
(tests/mem32b/oracle.py)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata.store.key_rows import KeyRow
from memstrata.store.memory import InMemoryStore
from memstrata.store.memory_dump import load_audit, load_keys
from memstrata.store.memory_filed import Filed

from .oracle import walked_load_audit, walked_load_keys
from .test_audit_redaction import CountingList, _event


def _key(i: int, user: str | None, h: str | None = None) -> KeyRow:
    return KeyRow(f"k{i}", h or f"h{i}", "t", "user", "n", "x", None, user, "")


class CountingFiled(Filed[str, KeyRow]):
    """The key rows, counting the rows read out of them."""

    read = 0

    def __iter__(self) -> Any:
        for k in super().__iter__():
            CountingFiled.read += 1
            yield k


def _rows_read(held: int) -> int:
    store = InMemoryStore()
    store._key_rows = CountingFiled(store._key_rows._owners)
    load_keys(store, [_key(i, f"u{i % 50}") for i in range(held)])
    CountingFiled.read = 0
    brought = [_key(held + i, "ann") for i in range(10)] + [_key(0, "ann", "other")]
    brought.append(_key(held + 99, "ann", "h1"))  # a held hash
    assert load_keys(store, brought) == 10
    return CountingFiled.read


def test_a_key_load_reads_no_held_row() -> None:
    # Before (every held row's hash gathered): 1,000 vs 10,000 read; now none.
    assert _rows_read(1_000) == _rows_read(10_000) == 0


def _events_read(held: int) -> int:
    store = InMemoryStore()
    store.audit_log._events = CountingList()
    load_audit(store, [_event(i, "t", "u", "u") for i in range(held)])
    CountingList.read = 0
    assert load_audit(store, [_event(held + i, "t", "ann", "ann") for i in range(10)]) == 10
    return CountingList.read


def test_an_audit_load_reads_no_held_event() -> None:
    # Before (every held event's id gathered): 1,000 vs 10,000 read; now none.
    assert _events_read(1_000) == _events_read(10_000) == 0


key_st = st.builds(
    lambda i, user, h: _key(i, user, f"h{h}"),
    st.integers(0, 15),
    st.sampled_from([None, "ann", "bob"]),
    st.integers(0, 15),
)
step_st = st.one_of(
    st.tuples(st.just("keys"), st.lists(key_st, max_size=6)),
    st.tuples(st.just("events"), st.lists(st.integers(0, 15), max_size=6)),
    st.tuples(st.just("purge_user"), st.sampled_from(["ann", "bob"])),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(step_st, max_size=15))
def test_loads_as_the_walk_of_every_held_row(steps: list[Any]) -> None:
    store = InMemoryStore()
    for step in steps:
        if step[0] == "keys":
            rows = dict(store._key_rows.items())
            assert load_keys(store, step[1]) == walked_load_keys(rows, step[1])
            assert dict(store._key_rows.items()) == rows
        elif step[0] == "events":
            events = list(store.audit_log._events)
            brought = [_event(i, "t", "ann", "ann") for i in step[1]]
            assert load_audit(store, brought) == walked_load_audit(events, brought)
            assert store.audit_log._events == events
        else:
            store.purge_user("t", step[1])
