"""``mem.audit.query`` / ``GET /v1/audit`` with a NUL, a lone surrogate or a non-string in
a text filter, or an offset past what a store's integer holds (session 28's audit).

Before: a NUL matched nothing on SQLite and was a ``StoreError`` on PostgreSQL (a 5xx over
HTTP: no PostgreSQL text parameter holds one); a lone surrogate a raw UnicodeEncodeError; an
int user "the schema is not what this memstrata expects" on PostgreSQL; offset 2**70 a raw
OverflowError on SQLite. Now each is a ValidationError (a 422) on every store."""

from __future__ import annotations

from typing import Any

import pytest

from memstrata import Memory, Scope, ValidationError
from server.conftest import Served

BAD: list[dict[str, Any]] = [
    {"user": "\x00"},
    {"actor": "a\x00"},
    {"record_id": "\x00"},
    {"action": "\x00"},
    {"after": "\x00"},
    {"user": "\udc00"},
    {"actor": "\udc00"},
    {"user": 5},
    {"offset": 2**70},
]


@pytest.fixture(params=["sqlite", "postgresql"])
def audited(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    url = (
        f"sqlite:///{tmp_path / 'a.db'}"
        if request.param == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    with Memory(url, embedder="hashing", background=False) as mem:
        rec = mem.add(Scope("t", "u"), "a note")
        mem.delete(Scope("t", "u"), rec.id)
        yield mem


@pytest.mark.parametrize("kwargs", BAD, ids=repr)
def test_a_bad_audit_filter_is_a_validation_error(audited: Memory, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="audit query"):
        audited.audit.query("t", **kwargs)
    assert len(audited.audit.query("t")) == 1  # the delete's event, still there


@pytest.mark.parametrize("query", ["user=%00", "actor=%00", "action=%00", "after=%00"])
def test_a_nul_in_an_audit_query_is_a_422(served: Served, query: str) -> None:
    r = served.client.get(f"/v1/audit?{query}", headers=served.h(served.admin))
    assert r.status_code == 422, r.text
    assert "NUL" in r.json()["error"]["message"]
