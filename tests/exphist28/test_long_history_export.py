"""An export of one record with a long history holds a part of its earlier versions
(``HISTORY_PAGE``), not all of them, on every store, and writes exactly what the whole read
wrote: the same lines in the same order, which an import reads back as they were.

Before (session 27): ``Store.histories`` read the record's versions whole and
``record_lines`` wrote them as one text: 4x the versions took ~4x the peak (20,000
versions: 62 MB traced). ``HISTORY_PAGE`` is set to :data:`PART` here so that the files
are small and the tests quick; docs/measurements.md has 20,000 versions at the real size."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.codec import record_to_dict
from memstrata.embedder.cache_types import LRUEmbeddingCache
from memstrata.records import MemoryRecord

from .conftest import PART, USER, Fresh, export_text, lines, write_long_history

SMALL, LARGE = 4 * PART, 16 * PART


def _import(mem: Memory, path: Path) -> str:
    with path.open(encoding="utf-8") as fp:
        mem.import_records(fp)
    mem._embedder._lru = LRUEmbeddingCache(16)  # the import's vectors are not the export's
    return mem.list(USER, limit=1)[0].id


def _export_peak(mem: Memory) -> int:
    """The peak traced memory of an export above what it leaves held (memory:// holds
    every version in the store: not the export's)."""
    tracemalloc.start()
    try:
        size = sum(map(len, mem.export_chunks(USER)))
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert size > 0
    return peak - held


def test_an_export_holds_a_part_of_a_long_history_on_every_store(
    fresh: Fresh, base: MemoryRecord, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memstrata.portability.HISTORY_PAGE", PART)
    peaks = []
    for n in (SMALL, LARGE):
        mem = fresh()
        _import(mem, write_long_history(tmp_path / f"{n}.jsonl", base, n))
        peaks.append(_export_peak(mem))
    # Before: the whole history was held (records and their text): ~4x the peak.
    assert peaks[1] < 1.35 * peaks[0], f"peak {peaks[0] / 1e6:.2f} MB -> {peaks[1] / 1e6:.2f} MB"


def test_the_export_in_parts_is_the_export_read_whole(
    fresh: Fresh, base: MemoryRecord, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same bytes as one ``Store.histories`` read writes (the clock is fixed), parts
    that end anywhere (``3 * PART + 7`` versions); and an import of it gives the history
    back version for version."""
    n = 3 * PART + 7
    mem = fresh()
    rid = _import(mem, write_long_history(tmp_path / "long.jsonl", base, n))
    whole = export_text(mem)  # HISTORY_PAGE is 5,000: one histories read
    monkeypatch.setattr("memstrata.portability.HISTORY_PAGE", PART)
    parted = export_text(mem)
    assert parted == whole
    got = lines(parted)
    assert [g["past_version"]["version"] for g in got[2:-1]] == list(range(1, n + 1))  # type: ignore[index]
    assert got[-1] == {"end": "complete", "count": 1, "past_versions": n}
    again = fresh()
    path = tmp_path / "again.jsonl"
    path.write_text(parted, encoding="utf-8")
    assert _import(again, path) == rid
    assert export_text(again) == parted
    before = [record_to_dict(v) for v in mem.history(USER, rid)]
    assert [record_to_dict(v) for v in again.history(USER, rid)] == before


def test_history_parts_are_the_versions_below_oldest_first(
    fresh: Fresh, base: MemoryRecord, tmp_path: Path
) -> None:
    n = 2 * PART + 3
    mem = fresh()
    rid = _import(mem, write_long_history(tmp_path / "long.jsonl", base, n))
    store = mem.store
    whole = store.histories(USER, [rid])[rid]
    for below, size in ((n + 1, PART), (n + 1, 1), (PART + 1, PART), (2, 7), (1, PART)):
        parts = list(store.history_parts(USER, rid, below=below, size=size))
        assert all(0 < len(p) <= size for p in parts), [len(p) for p in parts]
        got = [v for p in parts for v in p]
        assert [v.version for v in got] == list(range(1, below))
        assert [record_to_dict(v) for v in got] == [record_to_dict(v) for v in whole[: below - 1]]
    for scope, record in ((USER, "no-such-id"), (USER.as_caller("carol"), rid)):
        assert list(store.history_parts(scope, record, below=n + 1, size=PART)) == []
    other = USER.__class__("acme", "bob")
    assert list(store.history_parts(other, rid, below=n + 1, size=PART)) == []


def test_an_update_while_the_record_is_exported_leaves_the_history_it_had(
    fresh: Fresh, base: MemoryRecord, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record's line is written before its history is read; an update then gives it a
    version the export does not hold: its history stops below the line's version."""
    monkeypatch.setattr("memstrata.portability.HISTORY_PAGE", PART)
    n = 3 * PART
    mem = fresh()
    rid = _import(mem, write_long_history(tmp_path / "long.jsonl", base, n))
    chunks = mem.export_chunks(USER)
    text = next(chunks)  # the header and the record's line
    current = mem.get(USER, rid)
    mem.update(USER, rid, expected_version=current.version, content="moved to the hill")
    text += "".join(chunks)
    got = lines(text)
    assert got[1]["record"]["version"] == n + 1  # type: ignore[index]
    assert [g["past_version"]["version"] for g in got[2:-1]] == list(range(1, n + 1))  # type: ignore[index]
    assert got[-1] == {"end": "complete", "count": 1, "past_versions": n}
