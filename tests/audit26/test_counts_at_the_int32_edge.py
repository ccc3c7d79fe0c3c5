"""An imported record at ``version`` or ``access_count`` 2**31 - 1 (the largest an import
takes: PostgreSQL's INTEGER) leaves no room for what follows: on PostgreSQL every delete,
update and ``set_access`` of it is a ``StoreError`` ("integer out of range"), and every
search that finds it fails its write-behind batch (the access counts of the other records
of that batch lost, a warning each time); SQLite and ``memory://`` go past 2**31 - 1, to an
export that no memstrata imports. Found by audit26; fixed by pgint27 (session 27): BIGINT
columns on PostgreSQL (schema 18) and an import bound of 2**63 - 1 on every store (what
happens at that edge: tests/pgint27/test_counts_at_the_int64_edge.py)."""

from __future__ import annotations

import io
import json
import logging

import pytest

from memstrata import Memory, Scope

U = Scope("acme", "u1", session="s1")


def _export_with(field: str, value: int) -> tuple[str, str]:
    with Memory("memory://", embedder="hashing", background=False) as src:
        rid = src.add(U, "a note about the harbour in Lisbon").id
        head, line, end = "".join(src.export_chunks(U, include_history=False)).splitlines()
    item = json.loads(line)
    item["record"][field] = value
    return rid, "\n".join([head, json.dumps(item), end]) + "\n"


def test_a_record_imported_at_the_edge_can_be_deleted_and_exported_again(mem: Memory) -> None:
    rid, text = _export_with("version", 2**31 - 1)
    mem.import_records(io.StringIO(text))
    assert mem.delete(U, rid).status == "deleted"  # PostgreSQL was: StoreError, out of range
    buf = io.StringIO()
    mem.export_records(U, buf)
    with Memory("memory://", embedder="hashing", background=False) as again:
        # SQLite, memory:// were: version 2**31 exported, refused by every import
        assert again.import_records(io.StringIO(buf.getvalue())).imported == 1


def test_searches_over_a_record_read_2_31_times_keep_counting(
    mem: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    read, text = _export_with("access_count", 2**31 - 1)
    mem.import_records(io.StringIO(text))
    with caplog.at_level(logging.WARNING, logger="memstrata"):
        for _ in range(3):
            assert read in {h.record.id for h in mem.search(U, "harbour Lisbon")}
            mem.flush()
    # PostgreSQL: "a counter or cache write after a search failed: ... integer out of range"
    assert not [r for r in caplog.records if "failed" in r.getMessage()]
    buf = io.StringIO()
    mem.export_records(U, buf)
    with Memory("memory://", embedder="hashing", background=False) as again:
        assert again.import_records(io.StringIO(buf.getvalue())).imported == 1
