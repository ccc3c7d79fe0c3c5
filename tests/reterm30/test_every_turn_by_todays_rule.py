"""A property: whatever an older rule indexed each turn under (its own terms and the
questions of any turn of the user, or none), opening the store runs SQLite's schema 20 /
PostgreSQL's step 27 and every turn is then indexed under what a new version of it would be
(``reply_terms.kept_terms``, reply29's helper), deleted turns included; the lexical
statistics equal a recount; and a purge leaves none of a purged turn's words findable.
Fails before the migration (a turn keeps the terms the older rule gave it)."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import servers
from memstrata import Memory
from memstrata.clock import FixedClock
from memstrata.store.sqlite.store import SQLiteStore
from reterm30.old_stores import VICTIM, differing, index_under, mark_old
from store.reterm_files import pg_schema
from store.test_lex16_index_upkeep import check_statistics
from store.test_lexical_tenant_statistics import _recount, _statistics
from turn_calls import add_in_calls, word

N = 10
_CASES = given(
    asks=st.lists(st.booleans(), min_size=2, max_size=N),
    sessions=st.lists(st.sampled_from(["a", "b", None, None]), min_size=N, max_size=N),
    hours=st.lists(st.integers(0, 4), min_size=N, max_size=N),
    cuts=st.sets(st.integers(1, N - 1), max_size=5),
    deleted=st.sets(st.integers(0, N - 1), max_size=3),
    under=st.lists(st.one_of(st.none(), st.integers(0, N - 1)), min_size=N, max_size=N),
    purge=st.sets(st.integers(0, N - 1), max_size=3),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@_CASES
def test_on_sqlite(**case: Any) -> None:
    with tempfile.TemporaryDirectory() as d:
        _check(f"sqlite:///{Path(d) / 'm.db'}", **case)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@_CASES
def test_on_postgresql(**case: Any) -> None:
    server = servers.postgres()
    url = server.url()
    try:
        _check(url, **case)
    finally:
        server.drop(pg_schema(url))


def _check(
    url: str,
    asks: list[bool],
    sessions: list[str | None],
    hours: list[int],
    cuts: set[int],
    deleted: set[int],
    under: list[int | None],
    purge: set[int],
) -> None:
    n = len(asks)
    clock = FixedClock(datetime(2026, 1, 1, 12, 0, tzinfo=UTC))
    mem = Memory(url, embedder="hashing", clock=clock, background=False)
    try:
        times = [datetime(2025, 6, 1, h, tzinfo=UTC) for h in hours]
        ids = add_in_calls(mem, clock, asks, sessions, times, cuts)
        for i in sorted(deleted):
            if i < n:
                mem.delete(VICTIM, ids[i])
        texts = {rid: mem.store.get(VICTIM, rid, include_deleted=True).text for rid in ids}
        index_under(
            mem, {ids[i]: None if u is None else texts[ids[u % n]] for i, u in enumerate(under[:n])}
        )
    finally:
        mem.close()
    mark_old(url)
    mem = Memory(url, embedder="hashing", clock=clock, background=False)
    try:
        assert differing(mem, ids) == {}
        if isinstance(mem.store, SQLiteStore):
            check_statistics(mem.store)
        else:
            assert _statistics(url) == _recount(url)
        gone = [ids[i] for i in sorted(purge) if i < n]
        if gone:
            mem.purge(VICTIM, gone)
        for i in sorted(purge):
            if i < n:
                assert mem.search(VICTIM, word(i), mode="lexical") == [], word(i)
    finally:
        mem.close()
