"""A request body whose JSON object names a key twice was read as its last value:
``{"content": "a", "content": "b"}`` stored "b" and dropped "a" without a word, and so inside
``metadata`` (session 28's audit, left for the lead: it is in ``server/``). Now every route
refuses it before it runs: 400 ``malformed_json`` naming the key, nothing written. Fails
before the fix (201, one memory holding the last value)."""

from __future__ import annotations

import pytest

from memstrata import Filters, Scope
from server.conftest import Served

U = "/v1/users/alice"


@pytest.mark.parametrize(
    "body",
    [
        b'{"content": "I keep bees", "content": "I keep wasps"}',
        b'{"content": "I keep bees", "metadata": {"hives": 3, "hives": 4}}',
        b'{"content": "I keep bees", "tags": ["a"], "extra": [{"k": 1, "k": 2}]}',
    ],
)
def test_a_key_given_twice_is_refused_and_nothing_is_written(served: Served, body: bytes) -> None:
    r = served.client.post(
        f"{U}/memories",
        content=body,
        headers={**served.h(served.admin), "content-type": "application/json"},
    )
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "malformed_json"
    assert "twice" in error["message"] and "send each key once" in error["message"]
    assert served.memory.store.list(Scope("acme", "alice"), Filters(include_deleted=True)) == []


def test_a_body_with_each_key_once_is_taken(served: Served) -> None:
    r = served.client.post(
        f"{U}/memories",
        content=b'{"content": "I keep bees", "metadata": {"hives": 3, "bees": {"hives": 1}}}',
        headers={**served.h(served.admin), "content-type": "application/json"},
    )
    assert r.status_code == 201, r.text
    assert r.json()["metadata"] == {"hives": 3, "bees": {"hives": 1}}
