"""``memstrata migrate`` copies a long history a part at a time between every pair of
stores (SQLite, ``memory://``, PostgreSQL): the target holds every version, the
verification passes, and the traced peak of a copy with its verification does not grow
with the history (SQLite and PostgreSQL targets: a ``memory://`` target keeps it all).

Before mig29 a dump gave each record with every version (``RecordDump.versions``), and
the load and the verification took it so: 200 -> 800 earlier versions raised the copy's
traced peak about 3x.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from itertools import product
from pathlib import Path

import pytest

from memstrata.errors import StoreError
from memstrata.records import MemoryRecord
from memstrata.store.base import StoreCopy
from memstrata.store.migrate import copy_store, verify_stores

from .conftest import KINDS, LONG, PART, USER, Side, fill, long_file

Sides = Callable[[str], Side]


@pytest.mark.parametrize(("src", "dst"), list(product(KINDS, KINDS)))
def test_a_long_history_is_copied_whole_and_verified(
    src: str, dst: str, sides: Sides, base: MemoryRecord, tmp_path: Path, part: int
) -> None:
    source, target = sides(src), sides(dst)
    want = fill(source, base, tmp_path)
    dry = copy_store(source.target, target.target, dry_run=True, batch_size=5)
    assert dry.counts["versions"].source == want["versions"]
    report = copy_store(source.target, target.target, batch_size=5)
    assert report.ok, report.mismatches
    counts = report.counts
    assert counts["records"].copied == counts["records"].target == want["records"]
    assert counts["versions"].copied == counts["versions"].target == want["versions"]
    for rid, n in (("long0001", LONG), ("long0002", 2 * PART + 1)):
        got = target.store.history(USER, rid)
        assert got == source.store.history(USER, rid)
        assert [v.version for v in got] == list(range(1, n + 2))
    again = copy_store(source.target, target.target, batch_size=5, resume=True)
    assert again.ok and again.counts["records"].copied == 0  # nothing written twice
    assert verify_stores(source.target, target.target, batch_size=7).ok


def test_a_dump_gives_a_long_history_in_parts_newest_first(
    sides: Sides, base: MemoryRecord, tmp_path: Path, part: int
) -> None:
    """The parts' order and sizes, on each store (the contract a load relies on)."""
    for kind in KINDS:
        side = sides(kind)
        fill(side, base, tmp_path, long=4 * PART + 3)
        store = side.store
        assert isinstance(store, StoreCopy)
        batches = [
            [
                (
                    d.record.id,
                    len(d.versions),
                    d.past_count,
                    [[v.version for v in p] for p in d.earlier or ()],
                )
                for d in batch
            ]
            for batch in store.dump_records(500)
        ]
        flat = [d for batch in batches for d in batch]
        assert [d[0] for d in flat][12:14] == ["long0001", "long0002"], kind
        _, held, count, parts = flat[12]
        assert held == 1 and count == 4 * PART + 3
        assert [p[0] for p in parts] == [154, 104, 54, 4, 1], kind  # newest part first
        assert [v for p in reversed(parts) for v in p] == list(range(1, 4 * PART + 4))
        assert flat[13][3] == [[52, *range(53, 102)], [2, *range(3, 52)], [1]]
        short = [d for d in flat if d[0] not in ("long0001", "long0002")]
        assert all(d[3] == [] and d[1] == d[2] + 1 for d in short), kind


def test_a_long_history_can_be_read_once(
    sides: Sides, base: MemoryRecord, tmp_path: Path, part: int
) -> None:
    side = sides("sqlite")
    fill(side, base, tmp_path)
    store = side.store
    assert isinstance(store, StoreCopy)
    for batch in store.dump_records(500):
        for d in batch:
            if d.earlier is not None:
                assert sum(map(len, d.earlier)) == d.earlier.count
                with pytest.raises(StoreError, match="read once"):
                    iter(d.earlier)


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_long_history_read_after_the_next_batch_is_refused_by_name(
    kind: str, sides: Sides, base: MemoryRecord, tmp_path: Path, part: int
) -> None:
    """Its spool is closed when the dump is asked for its next batch: a ``StoreError``
    saying so, not a ``ValueError`` of a closed file."""
    side = sides(kind)
    fill(side, base, tmp_path)
    store = side.store
    assert isinstance(store, StoreCopy)
    held = [d for batch in store.dump_records(500) for d in batch if d.earlier is not None]
    assert len(held) == 2
    with pytest.raises(StoreError, match="before asking for the next batch"):
        next(iter(held[0].earlier or ()))


SMALL, LARGE = 4 * PART, 16 * PART


@pytest.mark.parametrize(("src", "dst"), list(product(KINDS, ("sqlite", "postgresql"))))
def test_a_copy_holds_a_part_of_a_long_history(
    src: str, dst: str, sides: Sides, base: MemoryRecord, tmp_path: Path, part: int
) -> None:
    """The traced peak of ``copy_store`` (dump, load, verify) of one record with 200 and
    800 earlier versions; before mig29: 2.07 -> 7.23 MB (SQLite to SQLite), 1.80 -> 6.23
    MB to 2.22 -> 7.33 MB on the others."""
    peaks = []
    for n in (SMALL, LARGE):
        source, target = sides(src), sides(dst)
        path = tmp_path / f"{n}.jsonl"
        with long_file(path, base, n, "long0001").open(encoding="utf-8") as fp:
            source.mem.import_records(fp)
        tracemalloc.start()
        try:
            held = tracemalloc.get_traced_memory()[0]
            report = copy_store(source.target, target.target)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert report.ok and report.counts["versions"].target == n
        peaks.append(peak - held)
    assert peaks[1] < 1.35 * peaks[0], f"peak {peaks[0] / 1e6:.2f} MB -> {peaks[1] / 1e6:.2f} MB"
