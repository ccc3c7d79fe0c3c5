"""``memstrata migrate`` reads a record's long history a part at a time: a
``StoreCopy.dump_records`` of a record with more than ``HISTORY_PAGE`` earlier versions
gives its current version in ``RecordDump.versions`` and the others in
``RecordDump.earlier``, newest part first (as the reverse deltas are read), from a spool
(``store/sqlite/dump.py``, ``_async/store/postgres/dump.py``, ``store/memory_dump.py``).
Left by exphist28 as a strict xfail (0.30 -> 1.00 MB traced from 200 to 800 versions);
mig29 made it pass, and tests the load, the verify and a kill in tests/mig29/."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import cast

import pytest

from memstrata import Memory
from memstrata.records import MemoryRecord
from memstrata.store.base import StoreCopy

from .conftest import PART, write_long_history

SMALL, LARGE = 4 * PART, 16 * PART


def test_a_migration_dump_holds_a_part_of_a_long_history(
    base: MemoryRecord, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memstrata.portability.HISTORY_PAGE", PART)
    peaks = []
    for n in (SMALL, LARGE):
        path = write_long_history(tmp_path / f"{n}.jsonl", base, n)
        with Memory(f"sqlite:///{tmp_path / f'{n}.db'}", embedder="hashing") as mem:
            with path.open(encoding="utf-8") as fp:
                mem.import_records(fp)
            store = cast(StoreCopy, mem.store)
            tracemalloc.start()
            try:
                versions = sum(
                    len(d.versions) + sum(len(part) for part in d.earlier or ())
                    for b in store.dump_records(500)
                    for d in b
                )
                held, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            assert versions == n + 1
            peaks.append(peak - held)
    assert peaks[1] < 1.35 * peaks[0], f"peak {peaks[0] / 1e6:.2f} MB -> {peaks[1] / 1e6:.2f} MB"
