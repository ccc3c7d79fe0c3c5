"""``UnitOfWork.insert_history`` on every store: earlier versions given to a record just
inserted come back from ``history`` as given; what the store cannot keep as history is
refused and nothing of the transaction is written."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from memstrata import Memory, Scope
from memstrata.errors import ValidationError
from memstrata.records import MemoryRecord, RecordStatus
from memstrata.store.base import RecordWrite

USER = Scope("acme", "alice")


def _versions(mem: Memory) -> list[MemoryRecord]:
    """A record at version 4 and its three earlier versions (made on a scratch user, then
    moved to ``USER``: only the values matter)."""
    scratch = Scope("acme", "scratch")
    rec = mem.add(scratch, "Alice keeps two hives of bees in her garden by the river")
    rec = mem.update(scratch, rec.id, expected_version=1, content="three hives", tags=["b"])
    mem.delete(scratch, rec.id)
    mem.restore(scratch, rec.id)
    versions = mem.history(scratch, rec.id)
    assert [v.version for v in versions] == [1, 2, 3, 4]
    return [replace(v, user=USER.user, id="h" * 32) for v in versions]


def test_the_versions_come_back_as_given(mem: Memory) -> None:
    *past, current = _versions(mem)
    with mem.store.transaction() as tx:
        tx.insert([RecordWrite(current, None, ("hives",))])
        tx.insert_history([past])
    assert mem.history(USER, current.id) == [*past, current]
    assert mem.history(USER, current.id)[2].status is RecordStatus.DELETED


def test_versions_with_gaps_and_counters_keep_them(mem: Memory) -> None:
    *past, current = _versions(mem)
    kept = [replace(past[0], access_count=7, last_accessed_at=past[0].created_at), past[2]]
    with mem.store.transaction() as tx:
        tx.insert([RecordWrite(current, None, ())])
        tx.insert_history([kept])
    got = mem.history(USER, current.id)
    assert [v.version for v in got] == [1, 3, 4]
    assert got[:2] == kept


def _refused(mem: Memory, current: MemoryRecord, histories: list[list[MemoryRecord]]) -> None:
    with pytest.raises(ValidationError, match="nothing was written"), mem.store.transaction() as tx:
        tx.insert([RecordWrite(current, None, ())])
        tx.insert_history(histories)
    with pytest.raises(Exception, match="no record"):
        mem.history(USER, current.id)  # the insert was taken back with it


def test_versions_of_a_record_not_stored_are_refused(mem: Memory) -> None:
    *past, current = _versions(mem)
    other = [replace(v, id="0" * 32) for v in past]
    _refused(mem, current, [other])


def test_versions_out_of_order_or_not_below_are_refused(mem: Memory) -> None:
    *past, current = _versions(mem)
    _refused(mem, current, [[past[1], past[0]]])
    _refused(mem, current, [[past[0], replace(past[1], version=4)]])
    _refused(mem, current, [[past[0], past[0]]])


def test_versions_of_another_record_in_one_sequence_are_refused(mem: Memory) -> None:
    *past, current = _versions(mem)
    _refused(mem, current, [[past[0], replace(past[1], id="0" * 32)]])


def test_a_record_with_history_already_is_refused(mem: Memory) -> None:
    *past, current = _versions(mem)
    with mem.store.transaction() as tx:
        tx.insert([RecordWrite(current, None, ())])
        tx.insert_history([past[:1]])
    refused = pytest.raises(ValidationError, match="earlier versions already")
    with refused, mem.store.transaction() as tx:
        tx.insert_history([past[1:]])
    assert mem.history(USER, current.id) == [past[0], current]
    later = replace(current, id="k" * 32, updated_at=current.updated_at + timedelta(hours=1))
    refused = pytest.raises(ValidationError, match="earlier versions already")
    with refused, mem.store.transaction() as tx:  # the same record twice in one call
        tx.insert([RecordWrite(later, None, ())])
        tx.insert_history(
            [[replace(v, id=later.id) for v in past[:1]], [replace(past[1], id=later.id)]]
        )
