"""A property: whatever the sessions, calls, dates and purges, every turn is indexed under
what a new version of it would be (``reply_terms.kept_terms``): the write, the re-terms of
a later write, of a purge, and a version use one definition of "the turn before". On the
merged tree of session 29 a session-less turn with another call's or another session's
turns dated between it and its question, or a turn written before a backfilled question,
broke it."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import Memory, Scope
from memstrata.clock import FixedClock
from memstrata.search.reply_terms import kept_terms
from turn_calls import add_in_calls

VICTIM = Scope("acme", "victim")


def _stored(mem: Memory) -> dict[str, tuple[str, ...]]:
    store: Any = mem.store
    return {d.record.id: tuple(d.terms) for batch in store.dump_records() for d in batch}


_CASES = given(
    asks=st.lists(st.booleans(), min_size=2, max_size=10),
    sessions=st.lists(st.sampled_from(["a", None, None]), min_size=10, max_size=10),
    hours=st.lists(st.integers(0, 5), min_size=10, max_size=10),
    cuts=st.sets(st.integers(1, 9), max_size=5),
    purge=st.sets(st.integers(0, 9), max_size=3),
    dated=st.booleans(),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@_CASES
def test_every_turn_is_indexed_as_its_next_version_would_be(**case: Any) -> None:
    _check("memory://", **case)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@_CASES
def test_on_sqlite_too(**case: Any) -> None:
    with tempfile.TemporaryDirectory() as d:
        _check(f"sqlite:///{Path(d) / 'm.db'}", **case)


def _check(
    url: str,
    asks: list[bool],
    sessions: list[str | None],
    hours: list[int],
    cuts: set[int],
    purge: set[int],
    dated: bool,
) -> None:
    clock = FixedClock(datetime(2026, 1, 1, 12, 0, tzinfo=UTC))
    mem = Memory(url, embedder="hashing", clock=clock, background=False)
    try:
        times = [datetime(2025, 6, 1, h, tzinfo=UTC) if dated else None for h in hours]
        ids = add_in_calls(mem, clock, asks, sessions, times, cuts)
        n = len(asks)
        gone = [ids[i] for i in sorted(purge) if i < n]
        if gone:
            mem.purge(VICTIM, gone)
        stored = _stored(mem)
        differ = {
            rid: (stored[rid], kept_terms(mem.store, mem.store.get(VICTIM, rid)))
            for rid in ids
            if rid not in gone and stored[rid] != kept_terms(mem.store, mem.store.get(VICTIM, rid))
        }
        assert differ == {}
    finally:
        mem.close()
