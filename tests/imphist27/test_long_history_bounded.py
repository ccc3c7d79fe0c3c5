"""An import of one record with a long history holds a chunk of its past versions
(``HISTORY_PAGE``), not all of them, on every store; so does an export of it.

Before (session 27): the reader held a record's past versions whole until the next
record line, the spools pickled them as one tuple and ``insert_history`` was given the
whole sequence: 4x the past versions took ~4x the peak (20,000 of them: 140 MB more RSS).
The files here are smaller, and the parts too (``HISTORY_PAGE`` set to 500), so the
tests are quick; docs/measurements.md has 20,000 versions at the real part size."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memstrata import Memory
from memstrata.embedder import hashing
from memstrata.embedder.cache_types import LRUEmbeddingCache

from .conftest import USER, Fresh, base_record, version_of, write_long_history

PART = 500  # HISTORY_PAGE in these tests: several parts in either file, and quick
SMALL, LARGE = 4 * PART, 16 * PART


def _transient(run: Callable[[], Any]) -> tuple[int, Any]:
    """(the peak traced memory of ``run`` above what it leaves held, its result): what
    the store keeps (memory:// keeps every version in memory) is not the import's."""
    tracemalloc.start()
    try:
        result = run()
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - held, result


def _import_peak(mem: Memory, path: Path) -> tuple[int, Any]:
    mem._embedder._lru = LRUEmbeddingCache(16)  # the memory's vector LRU is not the import's
    mem.stats(USER)  # opened and migrated before the measure
    with path.open(encoding="utf-8") as fp:
        return _transient(lambda: mem.import_records(fp))


@pytest.fixture(scope="module")
def long_files(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    root = tmp_path_factory.mktemp("long")
    rec = base_record(root)
    return {n: write_long_history(root / f"{n}.jsonl", rec, n) for n in (SMALL, LARGE)}


def test_an_import_holds_a_chunk_of_a_long_history_not_all_of_it(
    fresh: Fresh, long_files: dict[int, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hashing, "_WORD_CACHE_MAX", 0)  # the embedder's word cache is not ours
    monkeypatch.setattr("memstrata.portability.HISTORY_PAGE", PART)
    small, got_small = _import_peak(fresh(), long_files[SMALL])
    mem = fresh()
    large, got_large = _import_peak(mem, long_files[LARGE])
    assert (got_small.versions, got_large.versions) == (SMALL, LARGE)
    assert (got_small.imported, got_large.imported) == (1, 1)
    # Before: every past version was held (several times over): ~4x the peak.
    assert large < 1.35 * small, f"peak {small / 1e6:.1f} MB -> {large / 1e6:.1f} MB"
    rid = mem.list(USER, limit=1)[0].id
    versions = mem.history(USER, rid)
    assert [v.version for v in versions] == list(range(1, LARGE + 2))
    for v in (1, PART, PART + 1, PART + 2, LARGE // 2, LARGE, LARGE + 1):  # across parts
        assert versions[v - 1].text == version_of(versions[-1], v).text
        assert versions[v - 1].tags == version_of(versions[-1], v).tags


def test_an_export_holds_a_chunk_of_a_long_history_not_all_of_it(
    tmp_path: Path, long_files: dict[int, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memstrata.portability.HISTORY_PAGE", PART)
    peaks = []
    for n in (SMALL, LARGE):
        with Memory(f"sqlite:///{tmp_path / f'{n}.db'}", embedder="hashing") as mem:
            with long_files[n].open(encoding="utf-8") as fp:
                mem.import_records(fp)
            mem.stats(USER)
            peak, size = _transient(lambda mem=mem: sum(map(len, mem.export_chunks(USER))))
            assert size > n * 500
            peaks.append(peak)
    assert peaks[1] < 1.35 * peaks[0], f"peak {peaks[0] / 1e6:.1f} MB -> {peaks[1] / 1e6:.1f} MB"
