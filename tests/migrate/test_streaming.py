"""A migration streams: its memory is bounded by the batch, not by the size of the store."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from memstrata.store import open_store
from memstrata.store.migrate import copy_store

from .conftest import bulk

RECORDS = 2000
TEXT = 4000  # characters per record: ~8 MB of text in all


def test_copy_and_verify_hold_a_batch_at_a_time(tmp_path: Path) -> None:
    src = f"sqlite:///{tmp_path / 'src.db'}"
    dst = f"sqlite:///{tmp_path / 'dst.db'}"
    bulk(src, RECORDS, text_chars=TEXT)
    sizes: list[int] = []
    target = open_store(dst)
    load = target.load_records

    def counting(dumps):  # type: ignore[no-untyped-def]
        sizes.append(len(dumps))
        return load(dumps)

    target.load_records = counting  # type: ignore[method-assign]
    warm = tmp_path / "warm.db"  # imports and caches of a first run are not the copy's
    bulk(f"sqlite:///{warm}", 10)
    copy_store(f"sqlite:///{warm}", "memory://")
    tracemalloc.start()
    try:
        report = copy_store(src, target, batch_size=20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        target.close()
    assert report.ok, report.mismatches
    assert report.counts["records"].target == RECORDS
    assert max(sizes) == 20 and sum(sizes) == RECORDS
    text = RECORDS * TEXT * 1.2  # the records' text with their versions' (every 10th has 3)
    assert peak < text / 4, f"peak {peak / 1e6:.1f} MB for {text / 1e6:.0f} MB of text"
