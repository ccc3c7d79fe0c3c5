"""An import never drops a backup's record because another record now holds its id.

Until session 30 a fact key's first fact was named by a hash of the key and the key's last
stored record (``races.first_version_id``): after the key's records were purged, a new
first fact got the very id the exported one had. Importing the backup then skipped the
exported fact as "already present" — the value the user gave was not brought back (facts20
found it). Now a record whose id is held by a record created at another time is kept
beside it under a new id; the key's two live facts settle to one (the more confident
current, the other in its history); importing the same backup again adds nothing.

Since session 30 (ids30) a first fact's id is random, so a new fact no longer takes a
purged one's id; a record stored here under the old id by hand (as another import or a
migration could bring one back) stands for the holder.
"""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.records import MemoryRecord
from memstrata.store.base import RecordWrite

ALICE = Scope("acme", "alice")


def _fact(value: str, confidence: float) -> dict[str, Any]:
    return {"category": "location", "key": "city", "value": value, "confidence": confidence}


def _hold(mem: Memory, record_id: str) -> MemoryRecord:
    """A note created now, stored under ``record_id`` (a purged record's id)."""
    note = mem.add(ALICE, "a note that came back under an old id", dedup=False)
    mem.purge(ALICE, [note.id])
    held = replace(note, id=record_id)
    mem.store.insert([RecordWrite(held, None, ())])
    return held


def _values(mem: Memory) -> list[str]:
    return sorted({str(v.content.structured["value"]) for v in mem.facts.history(ALICE, "city")})


@pytest.mark.parametrize("into", [False, True])
def test_a_purged_keys_backup_comes_back_beside_the_new_fact(
    tmp_path: Path, clock: FixedClock, into: bool
) -> None:
    mem = Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", clock=clock)
    try:
        old = mem.facts.upsert(ALICE, _fact("Paris", 0.9)).record
        backup = io.StringIO()
        mem.export_records(ALICE, backup)
        mem.purge(ALICE, [old.id])
        clock.advance(days=3)
        new = mem.facts.upsert(ALICE, _fact("Oslo", 0.8)).record
        assert new.id != old.id  # before session 30 the key begun again took it again
        held = _hold(mem, old.id)
        target = ALICE if into else None
        report = mem.import_records(io.StringIO(backup.getvalue()), into=target)
        # before: 0 imported, 1 skipped (into= gives every record a new id anyway)
        assert (report.imported, report.renamed) == (1, 0 if into else 1)
        assert _values(mem) == ["Oslo", "Paris"]  # nothing the user gave is lost
        assert mem.facts.get(ALICE, "city").content.structured["value"] == "Paris"  # 0.9
        assert len(mem.facts.all(ALICE)) == 1
        again = mem.import_records(io.StringIO(backup.getvalue()), into=target)
        assert (again.imported, again.skipped, again.renamed) == (0, 1, 0)
        assert _values(mem) == ["Oslo", "Paris"]
        assert mem.get(ALICE, old.id).text == held.text  # the holder is left as it was
    finally:
        mem.close()


def test_a_record_that_only_changed_since_the_export_is_still_skipped(
    tmp_path: Path, clock: FixedClock
) -> None:
    """The same record, updated since (same id, same creation time): the import keeps the
    store's newer version and adds nothing, as before."""
    mem = Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", clock=clock)
    try:
        note = mem.add(ALICE, "the ferry leaves at nine")
        backup = io.StringIO()
        mem.export_records(ALICE, backup)
        clock.advance(hours=1)
        mem.update(ALICE, note.id, expected_version=note.version, content="it leaves at ten")
        report = mem.import_records(io.StringIO(backup.getvalue()))
        assert (report.imported, report.skipped, report.renamed) == (0, 1, 0)
        assert mem.get(ALICE, note.id).text == "it leaves at ten"
    finally:
        mem.close()


def test_references_follow_a_renamed_record(tmp_path: Path, clock: FixedClock) -> None:
    """A record of the backup that names the renamed one (``superseded_by``, sources) names
    it by its new id."""
    mem = Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", clock=clock)
    try:
        first = mem.facts.upsert(ALICE, _fact("Paris", 0.6)).record
        clock.advance(days=1)
        second = mem.facts.upsert(ALICE, {**_fact("Rome", 0.9), "replaces": "Paris"}).record
        backup = io.StringIO()
        mem.export_records(ALICE, backup)
        mem.purge(ALICE, [first.id, second.id])
        clock.advance(days=3)
        assert mem.facts.upsert(ALICE, _fact("Oslo", 0.5)).record.id != first.id
        _hold(mem, first.id)
        report = mem.import_records(io.StringIO(backup.getvalue()))
        assert report.renamed == 1 and report.imported == 2
        assert _values(mem) == ["Oslo", "Paris", "Rome"]
        versions = mem.facts.history(ALICE, "city")
        paris = [v for v in versions if v.content.structured["value"] == "Paris"]
        assert paris and all(v.id != first.id for v in paris)
        ends = {v.superseded_by for v in paris if v.superseded_by}
        assert ends <= {second.id} | {v.id for v in versions}
    finally:
        mem.close()
