"""A NUL character in the middle of a long history (text an old store kept): the parts
are checked as the load reads them. A copy into PostgreSQL (which cannot store it) stops
at the record's batch, naming the record and the version, and leaves none of the batch;
``resume=True, replace_nul=True`` then stores it as U+FFFD; a dry run counts it; a
target that stores NUL keeps it, counted."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from imphist27.conftest import version_of
from memstrata.errors import ValidationError
from memstrata.records import MemoryRecord
from memstrata.store.base import RecordDump, StoreCopy
from memstrata.store.migrate import copy_store

from .conftest import LONG, USER, Side

Sides = Callable[[str], Side]
MIDDLE = LONG // 2


def _with_nul(base: MemoryRecord) -> list[RecordDump]:
    rec = replace(base, id="long0001")
    versions = [version_of(rec, v) for v in range(1, LONG + 2)]
    bad = versions[MIDDLE - 1]
    versions[MIDDLE - 1] = replace(bad, content=replace(bad.content, raw="nul\x00here"))
    short = [
        RecordDump((replace(version_of(base, 1), id=f"short{i}"),), None, ("short",))
        for i in range(3)
    ]
    return [short[0], RecordDump(tuple(versions), None, ("bees",)), *short[1:]]


@pytest.mark.usefixtures("part")
def test_a_nul_in_the_middle_of_a_long_history(sides: Sides, base: MemoryRecord) -> None:
    source = sides("memory")
    src = source.store
    assert isinstance(src, StoreCopy)
    assert src.load_records(_with_nul(base)) == 4
    assert copy_store(src, sides("postgresql").target, dry_run=True).nul_texts == 1
    target = sides("postgresql")
    with pytest.raises(ValidationError, match=f"long0001 holds a NUL .* version {MIDDLE} "):
        copy_store(src, target.target)
    assert target.store.stats(USER).records == 0  # the batch (every record) rolled back
    report = copy_store(src, target.target, resume=True, replace_nul=True)
    assert report.ok and report.nul_texts == 1
    got = target.store.history(USER, "long0001")
    assert len(got) == LONG + 1 and got[MIDDLE - 1].content.raw == "nul\ufffdhere"
    kept = sides("sqlite")
    report = copy_store(src, kept.target)
    assert report.ok and report.nul_texts == 1
    assert kept.store.history(USER, "long0001")[MIDDLE - 1].content.raw == "nul\x00here"
