"""A record's version and access count hold up to 2**63 - 1 on every store (an import takes
that much; PostgreSQL's columns are BIGINT since schema 18). At the edge itself:

- a version past it is a :class:`ValidationError` saying what to do, and nothing is written
  (the version is the record's identity for optimistic locking: it may not saturate);
- an access count stops there (saturates), silently and on every store: a statistic, and a
  search must never fail on it.

Before session 27: PostgreSQL's write of either was a ``StoreError`` ("bigint out of
range" here, "integer out of range" at 2**31 - 1), SQLite's a raw ``OverflowError`` (a
version) or a REAL in an INTEGER column (a count), ``memory://`` an export no import took."""

from __future__ import annotations

import io
import json
import logging

import pytest

from memstrata import Memory, Scope, ValidationError

MAX_COUNT = 2**63 - 1  # memstrata.validation.MAX_COUNT

U = Scope("acme", "u1", session="s1")


def _imported(mem: Memory, **fields: int) -> str:
    with Memory("memory://", embedder="hashing", background=False) as src:
        rid = src.add(U, "a note about the harbour in Lisbon").id
        head, line, end = "".join(src.export_chunks(U, include_history=False)).splitlines()
    item = json.loads(line)
    item["record"].update(fields)
    assert mem.import_records(io.StringIO("\n".join([head, json.dumps(item), end]) + "\n")).imported
    return rid


def _reimports(mem: Memory) -> int:
    buf = io.StringIO()
    mem.export_records(U, buf)
    with Memory("memory://", embedder="hashing", background=False) as again:
        return again.import_records(io.StringIO(buf.getvalue())).imported


def test_a_record_at_the_last_version_refuses_a_change_and_writes_nothing(mem: Memory) -> None:
    rid = _imported(mem, version=MAX_COUNT)
    before = mem.get(U, rid)
    for change in (
        lambda: mem.delete(U, rid),
        lambda: mem.update(U, rid, expected_version=MAX_COUNT, content="the harbour in Porto"),
        lambda: mem.update(U, rid, expected_version=MAX_COUNT, importance=0.9),
    ):
        with pytest.raises(ValidationError, match=r"2\*\*63 - 1, the last one a store holds"):
            change()
        after = mem.get(U, rid)
        assert (after.version, after.status, after.content.raw, after.importance) == (
            before.version,
            before.status,
            before.content.raw,
            before.importance,
        )
    assert len(mem.history(U, rid)) == 1  # no archived version either
    assert _reimports(mem) == 1
    mem.purge(U, [rid])  # what the message says to do works
    assert mem.list(U) == []


def test_a_record_one_below_the_last_version_takes_one_change(mem: Memory) -> None:
    rid = _imported(mem, version=MAX_COUNT - 1)
    assert mem.delete(U, rid).status == "deleted"
    assert mem.get(U, rid, include_deleted=True).version == MAX_COUNT
    assert _reimports(mem) == 1


def test_an_access_count_stops_at_the_edge(mem: Memory, caplog: pytest.LogCaptureFixture) -> None:
    rid = _imported(mem, access_count=MAX_COUNT - 1)
    with caplog.at_level(logging.WARNING, logger="memstrata"):
        for _ in range(3):
            hits = mem.search(U, "harbour Lisbon")
            assert rid in {h.record.id for h in hits}
            assert all(h.record.access_count <= MAX_COUNT for h in hits)
            mem.flush()
    assert not [r for r in caplog.records if "failed" in r.getMessage()]
    assert mem.get(U, rid).access_count == MAX_COUNT  # +1 exact, then it stays
    assert _reimports(mem) == 1
