"""Numbers too big for a store, refused the same way on every store before anything is
written: an imported record's ``version`` or ``access_count`` over a 64-bit integer (over
PostgreSQL's INTEGER before session 27's BIGINT columns)
(SQLite raised a raw ``OverflowError``, PostgreSQL a StoreError, ``memory://`` took it),
and a metadata integer of over ~4,200 digits (``memory://`` stored it and every export of
the user then failed with a raw ``ValueError``; SQLite refused it at the write)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from memstrata import ImportFormatError, Memory, Scope, ValidationError
from robustness.conftest import snapshot

ALICE = Scope("acme", "alice", session="s1")


@pytest.mark.parametrize(
    ("field", "value"),
    [("version", 2**63), ("version", 10**30), ("access_count", 2**63)],
)
def test_an_imported_count_over_int64_is_an_import_error(
    mem: Memory, field: str, value: int
) -> None:
    mem.add(ALICE, "I live in Lisbon")
    head, line, *rest = "".join(mem.export_chunks(ALICE)).splitlines()
    item: dict[str, Any] = json.loads(line)
    item["record"].update({"id": "imported-1", field: value})
    before = snapshot(mem, ALICE)
    refused = f"line 2: (record is malformed: )?{field} must be in"
    with pytest.raises(ImportFormatError, match=refused):
        mem.import_records(io.StringIO("\n".join([head, json.dumps(item), *rest]) + "\n"))
    assert snapshot(mem, ALICE) == before
    item["record"].update({field: 2**63 - 1})  # session 27: every store holds it
    report = mem.import_records(io.StringIO("\n".join([head, json.dumps(item), *rest]) + "\n"))
    assert report.imported == 1


def test_a_metadata_integer_json_cannot_carry_is_refused(mem: Memory) -> None:
    before = snapshot(mem, ALICE)
    with pytest.raises(ValidationError, match="store it as a string"):
        mem.add(ALICE, "a big number", metadata={"n": 10**5000})
    assert snapshot(mem, ALICE) == before
    mem.add(ALICE, "a big number", metadata={"n": 10**4000})
    assert "".join(mem.export_chunks(ALICE)).count("1" + "0" * 4000) == 1
