"""Over HTTP, ``PATCH`` takes the version a record is at, up to 2**63 - 1 (it took at most
2**31 before session 27, so a record imported past that could not be edited over HTTP);
at 2**63 - 1 the answer is a 422 saying what to do, and nothing is written."""

from __future__ import annotations

import io
import json

from memstrata import Memory, Scope
from server.conftest import Served

ME = Scope("acme", "u1")
U = "/v1/users/u1"


def _imported(mem: Memory, version: int) -> str:
    with Memory("memory://", embedder="hashing", background=False) as src:
        rid = src.add(ME, "a note about the harbour in Lisbon").id
        head, line, end = "".join(src.export_chunks(ME, include_history=False)).splitlines()
    item = json.loads(line)
    item["record"]["version"] = version
    mem.import_records(io.StringIO("\n".join([head, json.dumps(item), end]) + "\n"))
    return rid


def test_a_record_past_2_31_is_edited_and_the_last_version_refused(served: Served) -> None:
    h = served.h(served.admin)
    rid = _imported(served.memory, 2**40)
    got = served.client.patch(
        f"{U}/memories/{rid}", headers=h, json={"expected_version": 2**40, "content": "Porto"}
    )
    assert got.status_code == 200, got.text  # before: 422, expected_version <= 2**31
    assert got.json()["version"] == 2**40 + 1
    last = _imported(served.memory, 2**63 - 1)
    got = served.client.patch(
        f"{U}/memories/{last}", headers=h, json={"expected_version": 2**63 - 1, "importance": 1}
    )
    assert got.status_code == 422, got.text
    assert "the last one a store holds" in got.text
    assert served.memory.get(ME, last).importance != 1
