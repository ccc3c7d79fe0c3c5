"""A passage's vector is stored once on SQLite: the cache entry an add's text was embedded
into moves into the record's vector row (``vectors.own``), which needs the two to be the
very same vector.

Before, ``check_vectors`` divided every row by its norm, so the cached embedder's answer
(rows already divided once, divided again) differed from the entry it had cached by one
float32 step in some components: those entries stayed, a second copy of the vector
(194 of 3,000 messages in session 20's measurement, 27 of these 80)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata import Memory, Scope
from memstrata.embedder.base import check_vectors
from memstrata.embedder.cache import cache_key

BOB = Scope("acme", "bob", session="s1")


def test_an_ingest_leaves_no_second_copy_of_its_vectors(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    mem = Memory(f"sqlite:///{path}", embedder="hashing", background=False)
    try:
        texts = [f"a turn of a long import, number {i}, about ferries" for i in range(80)]
        mem.add_messages(BOB, [{"role": "user", "content": t} for t in texts])
        mem.flush()
        model = mem.embedder.model_id
        keys = [cache_key(t, query=False) for t in texts]
        found = mem.store.cached_vectors(BOB.user_scope, model, keys)
        assert set(found) == set(keys)  # the cache still finds every text's vector
    finally:
        mem.close()
    with sqlite3.connect(path) as conn:
        left = conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0]
        own = conn.execute("SELECT count(*) FROM vectors WHERE own = 1").fetchone()[0]
    assert (left, own) == (0, 80)


_rows = st.lists(
    st.lists(st.floats(-1e3, 1e3, allow_nan=False, width=32), min_size=8, max_size=8),
    min_size=1,
    max_size=6,
).filter(  # rows check_vectors accepts: a norm float32 can hold
    lambda rows: bool((np.linalg.norm(np.asarray(rows, np.float32), axis=1) > 1e-6).all())
)


@settings(max_examples=200, deadline=None)
@given(_rows)
def test_normalising_twice_changes_nothing(rows: list[list[float]]) -> None:
    once = check_vectors(rows, len(rows), 8, "m")
    np.testing.assert_allclose(np.linalg.norm(once, axis=1), 1.0, rtol=0, atol=1e-6)
    assert check_vectors(once, len(rows), 8, "m").tobytes() == once.tobytes()
