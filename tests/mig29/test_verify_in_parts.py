"""The verification reads a long history a part at a time and still finds a version that
differs, or is missing, in its middle (on every target store), and nothing else."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from memstrata.records import MemoryRecord
from memstrata.store.base import StoreCopy
from memstrata.store.migrate import copy_store, verify_stores

from .conftest import KINDS, LONG, Side, fill

Sides = Callable[[str], Side]
MIDDLE = LONG // 2  # in the ninth of seventeen parts


def _changed(part: list[MemoryRecord]) -> list[MemoryRecord]:
    return [replace(v, importance=0.123) if v.version == MIDDLE else v for v in part]


def _dropped(part: list[MemoryRecord]) -> list[MemoryRecord]:
    return [v for v in part if v.version != MIDDLE]


def _load_tampered(
    source: StoreCopy, target: StoreCopy, change: Callable[[list[MemoryRecord]], list[MemoryRecord]]
) -> None:
    """Load every record into ``target``, in order, the long one with ``change`` made to
    its parts."""
    tampered = 0
    for batch in source.dump_records(5):
        for i, d in enumerate(batch):
            if d.record.id == "long0001":
                assert d.earlier is not None
                batch[i] = replace(d, earlier=d.earlier.changed(change))
                tampered += 1
        assert target.load_records(batch) == len(batch)
    assert tampered == 1


@pytest.mark.parametrize("dst", KINDS)
@pytest.mark.parametrize("change", [_changed, _dropped], ids=["changed", "missing"])
def test_a_differing_version_in_the_middle_of_a_long_history_is_found(
    dst: str,
    change: Callable[[list[MemoryRecord]], list[MemoryRecord]],
    sides: Sides,
    base: MemoryRecord,
    tmp_path: Path,
    part: int,
) -> None:
    source, target = sides("sqlite"), sides(dst)
    want = fill(source, base, tmp_path)
    src, dst_store = source.store, target.store
    assert isinstance(src, StoreCopy) and isinstance(dst_store, StoreCopy)
    _load_tampered(src, dst_store, change)
    report = copy_store(source.target, target.target, resume=True, batch_size=5)
    assert report.counts["records"].copied == 0
    for got in (report, verify_stores(source.target, target.target, batch_size=3)):
        assert [(m.kind, m.item, m.what) for m in got.mismatches] == [
            ("records", "acme/alice/long0001", "history differ")
        ]
        missing = int(change is _dropped)
        assert got.counts["versions"].target == want["versions"] - missing
        assert got.counts["versions"].source == want["versions"]
