"""A caller's export of a record with a long history, read in parts, shows what the whole
read showed (session 26's ``readable_versions``, session 27's caller view): the versions
made after the record was shared, none of the private ones before, and no other reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata.codec import record_to_dict
from memstrata.records import MemoryRecord

from .conftest import PART, SECRET, USER, Fresh, export_text, lines, write_shared_late

CAROL_ON_ALICE = USER.as_caller("carol")


def test_a_callers_export_in_parts_shows_only_what_was_shared(
    fresh: Fresh, base: MemoryRecord, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    n, private = 4 * PART + 3, 2 * PART + 5  # the shared versions span parts
    mem = fresh()
    with write_shared_late(tmp_path / "shared.jsonl", base, n, private).open() as fp:
        mem.import_records(fp)
    rid = mem.list(USER, limit=1)[0].id
    whole = export_text(mem, CAROL_ON_ALICE)  # one histories read
    monkeypatch.setattr("memstrata.portability.HISTORY_PAGE", PART)
    parted = export_text(mem, CAROL_ON_ALICE)
    assert parted == whole
    assert SECRET not in parted and "dave" not in parted
    got = lines(parted)
    # numbered among the versions carol may read (caller28), across the parts
    numbers = [g["past_version"]["version"] for g in got[2:-1]]  # type: ignore[index]
    assert numbers == list(range(1, n - private + 1))
    assert got[1]["record"]["version"] == n - private + 1  # type: ignore[index]
    assert got[-1] == {"end": "complete", "count": 1, "past_versions": n - private}
    shown = [record_to_dict(v) for v in mem.history(CAROL_ON_ALICE, rid)[:-1]]
    assert [g["past_version"] for g in got[2:-1]] == shown
    owners = export_text(mem)  # the owner's: every version, every reader
    assert SECRET in owners and "dave" in owners
    assert lines(owners)[-1] == {"end": "complete", "count": 1, "past_versions": n}
