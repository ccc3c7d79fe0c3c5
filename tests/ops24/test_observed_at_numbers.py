"""A time given as a number is refused at every entry point, with the fix (an ISO 8601
string, or an aware ``datetime``), never read as a Unix time nor replaced by "now".

Before session 24: the MCP tool took ``observed_at: 12`` as 1970-01-01T00:00:12 (its test
is in test_mcp_argument_errors.py); the library took ``observed_at=0``, ``""`` or
``False`` in ``add_message`` / ``add_messages`` for "now" (a falsy test, where any other
number was refused). The HTTP API and the import refused numbers already: guarded here."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memstrata import AsyncMemory, Memory, MemstrataError, Scope
from memstrata.server import create_app
from memstrata.server.app import Limits
from memstrata.server.keys import SQLiteKeyStore

ALICE = Scope("acme", "alice", session="s1")
NUMBERS = [0, 12, 1.5, 1_700_000_000, 1_700_000_000_000, False, True, ""]


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(f"sqlite:///{tmp_path / 'n.db'}", embedder="hashing", background=False) as m:
        yield m


@pytest.mark.parametrize("when", NUMBERS, ids=repr)
def test_the_library_refuses_a_number_for_a_time(memory: Memory, when: Any) -> None:
    with pytest.raises(MemstrataError, match="observed_at"):
        memory.add_message(ALICE, "user", "said at a number", observed_at=when)
    with pytest.raises(MemstrataError, match="observed_at"):
        memory.add_messages(
            ALICE, [{"role": "user", "content": "said at a number", "observed_at": when}]
        )
    assert memory.list(ALICE) == []


def test_the_import_refuses_a_number_for_a_time(memory: Memory) -> None:
    memory.add_message(ALICE, "user", "said at noon", observed_at="2024-05-08T12:00:00Z")
    out = io.StringIO()
    memory.export_records(ALICE, out)
    lines = out.getvalue().splitlines()
    assert sum('"record"' in line for line in lines) == 1
    for i, line in enumerate(lines):
        row = json.loads(line)
        if "record" in row:
            row["record"]["observed_at"] = 12
            lines[i] = json.dumps(row)
    with pytest.raises(MemstrataError, match="observed_at"):
        memory.import_records(io.StringIO("\n".join(lines) + "\n"), into=Scope("acme", "bob"))
    assert memory.list(Scope("acme", "bob")) == []


@pytest.mark.parametrize("when", NUMBERS[:-1], ids=repr)  # "" is not a time string: 422 too
def test_the_http_api_refuses_a_number_for_a_time(tmp_path: Path, when: Any) -> None:
    db = tmp_path / "h.db"
    keys = SQLiteKeyStore(str(db))
    key = keys.create("acme").secret
    native = AsyncMemory(f"sqlite:///{db}", embedder="hashing", background=False)
    app = create_app(native, keys, limits=Limits(rate=0), on_close=native.aclose)
    auth = {"Authorization": f"Bearer {key}"}
    with TestClient(app) as client:
        r = client.post(
            "/v1/users/alice/sessions/s1/messages",
            headers=auth,
            json={"role": "user", "content": "said at a number", "observed_at": when},
        )
        assert r.status_code == 422, r.text
        error = r.json()["error"]
        assert error["fields"] == ["body.observed_at"], error
        assert "ISO 8601" in error["message"] and "Value error" not in error["message"], error
        if not isinstance(when, bool):
            assert "not a number" in error["message"], error
        r = client.post(
            "/v1/users/alice/memories",
            headers=auth,
            json={"content": "said at noon", "observed_at": "2024-05-08T12:00:00Z"},
        )
        assert r.status_code == 201, r.text
        assert datetime.fromisoformat(r.json()["observed_at"]) == datetime(
            2024, 5, 8, 12, tzinfo=UTC
        )
    keys.close()
