"""memory://'s indexes of citations and links (``_cites``, ``_links``: id -> the user's
records a version of which cites or names it) no longer hold a purged record among the
records naming an id (mem34: its current version's citations left, the ids its archived
versions named stayed, as SQLite's link rows did, tests/mem34/test_sqlite_purge_rows.py)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.purge31b.test_links_equal_scan import _build, stores

from memstrata import Memory


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(stores, st.sets(st.integers(0, 11), min_size=1, max_size=3))
def test_no_index_entry_names_a_purged_record(specs: list[Any], picked: set[int]) -> None:
    mem = Memory("memory://")
    try:
        owner, ids = _build(mem, specs, "ann")
        gone = sorted({ids[i % len(ids)] for i in picked})
        mem.purge(owner, gone)
        store: Any = mem.store
        for index in (store._cites, store._links):
            held = index.get(("acme", "ann"), {})
            assert [(i, sorted(rids)) for i, rids in held.items() if set(gone) & rids] == []
    finally:
        mem.close()
