"""The SQLite vector cache loads what changed, not the user's whole matrix (issue 7 item 6).

A cluster's centroid or a summary's vector changes with every ingest job; before, each such
update bumped the user's generation and the next search reloaded every vector of the user.
Now the changed row gets a new change number and replaces its old copy in the cache. These
tests hold the cache to exact answers (the same as a fresh store's) while counting the rows
it loads, across updates, status changes, compactions and a second process (connection).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from memstrata import Content, MemoryRecord, Scope
from memstrata.filters import Filters
from memstrata.records import RecordStatus, RecordType
from memstrata.store import RecordWrite
from memstrata.store.sqlite import SQLiteStore
from memstrata.store.sqlite import vectors as vectors_module

NOW = datetime(2026, 1, 1, tzinfo=UTC)
ME = Scope("t", "u")
DIMS = 8


def _unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(DIMS).astype(np.float32)
    return v / np.linalg.norm(v)


def _record(i: int, type_: str = "note") -> MemoryRecord:
    return MemoryRecord(
        id=f"r{i}",
        tenant="t",
        user="u",
        type=type_,
        content=Content(f"text {i}"),
        created_at=NOW,
        updated_at=NOW,
        observed_at=NOW,
    )


def _fresh_answer(
    path: Path, query: np.ndarray, k: int, filters: Filters
) -> list[tuple[str, float]]:
    other = SQLiteStore(str(path))  # its own, empty cache: loads everything
    try:
        return [(c.id, c.score) for c in other.vector_search(ME, query, k, filters)]
    finally:
        other.close()


def test_an_updated_vector_costs_one_row_and_answers_stay_exact(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    path = tmp_path / "v.db"
    store = SQLiteStore(str(path))
    records = [_record(i, "cluster" if i % 10 == 0 else "message") for i in range(300)]
    store.insert([RecordWrite(r, _unit(rng), ("text",)) for r in records])
    query = _unit(rng)
    clusters = Filters(types=frozenset({RecordType.CLUSTER}))
    store.vector_search(ME, query, 5, clusters)
    cache = store._vectors
    loaded = cache.rows_loaded
    assert loaded == 300
    for step in range(40):  # far more updates than rows kept dead before a compaction
        target = records[(step * 10) % 300]
        current = store.get(ME, target.id)
        store.replace(
            ME,
            RecordWrite(replace(current, version=current.version + 1), _unit(rng), ("text",)),
            expected_version=current.version,
        )
        got = [(c.id, c.score) for c in store.vector_search(ME, query, 5, clusters)]
        assert cache.rows_loaded == loaded + 1, "one changed row, one row loaded"
        loaded = cache.rows_loaded
        assert got == _fresh_answer(path, query, 5, clusters)
        everything = [(c.id, c.score) for c in store.vector_search(ME, query, 400, Filters())]
        assert len(everything) == 300 and len({i for i, _ in everything}) == 300
    store.close()


def test_status_and_supersession_changes_reload_only_their_rows(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    path = tmp_path / "s.db"
    store = SQLiteStore(str(path))
    records = [_record(i) for i in range(50)]
    store.insert([RecordWrite(r, _unit(rng), ("text",)) for r in records])
    query = _unit(rng)
    top = [c.id for c in store.vector_search(ME, query, 50, Filters())]
    before = store._vectors.rows_loaded
    gone = top[:3]
    assert store.set_status(ME, gone, RecordStatus.DELETED, NOW) == gone
    now = [c.id for c in store.vector_search(ME, query, 50, Filters())]
    assert now == [i for i in top if i not in gone]
    assert store._vectors.rows_loaded == before + 3
    deleted = [c.id for c in store.vector_search(ME, query, 50, Filters(include_deleted=True))]
    assert deleted == top  # the same order as before: ties and rows by insertion
    kept = store.get(ME, top[3])
    store.replace(
        ME,
        RecordWrite(replace(kept, version=kept.version + 1, superseded_by="x"), None, ("text",)),
        expected_version=kept.version,
    )
    assert top[3] not in {c.id for c in store.vector_search(ME, query, 50, Filters())}
    assert store._vectors.rows_loaded == before + 4
    assert [c.id for c in store.vector_search(ME, query, 50, Filters())] == [
        c[0] for c in _fresh_answer(path, query, 50, Filters())
    ]
    store.close()


def test_another_connection_sees_updates_and_purges(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    path = tmp_path / "p.db"
    writer = SQLiteStore(str(path))
    reader = SQLiteStore(str(path))
    records = [_record(i) for i in range(20)]
    writer.insert([RecordWrite(r, _unit(rng), ("text",)) for r in records])
    query = _unit(rng)
    reader.vector_search(ME, query, 3, Filters())
    best = writer.get(ME, "r7")
    writer.replace(ME, RecordWrite(replace(best, version=2), query, ("text",)), expected_version=1)
    (first, *_) = reader.vector_search(ME, query, 3, Filters())
    assert first.id == "r7" and first.score == pytest.approx(1.0, abs=1e-5)
    writer.purge(ME, ["r7"])
    assert "r7" not in {c.id for c in reader.vector_search(ME, query, 20, Filters())}
    writer.close()
    reader.close()


def test_ties_are_broken_by_insertion_order_after_updates(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "t.db"))
    same = np.ones(DIMS, np.float32) / np.sqrt(DIMS)
    records = [_record(i) for i in range(6)]
    store.insert([RecordWrite(r, same, ("text",)) for r in records])
    for r in records[:3]:  # updated rows move to the end of the cache's storage
        store.replace(ME, RecordWrite(replace(r, version=2), same, ("text",)), expected_version=1)
    assert [c.id for c in store.vector_search(ME, same, 4, Filters())] == ["r0", "r1", "r2", "r3"]
    assert [c.id for c in store.vector_search(ME, same, 6, Filters())] == [r.id for r in records]
    store.close()


def test_top_k_breaks_ties_by_the_given_order() -> None:
    scores = np.array([0.5, 0.9, 0.5, 0.9, 0.1], np.float32)
    ties = np.array([40, 30, 20, 10, 0])
    assert list(vectors_module.top_k(scores, 3, ties)) == [3, 1, 2]
    assert list(vectors_module.top_k(scores, 5, ties)) == [3, 1, 2, 0, 4]
    assert list(vectors_module.top_k(scores, 2)) == [1, 3]
