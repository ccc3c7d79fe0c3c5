"""A number that is not finite (JSON's ``NaN``, ``Infinity``, which Python's JSON reader
takes) sent where a bounded number goes was answered "send a smaller value" or "send a
larger value": NaN is neither. Now the fix says to send a finite number, over HTTP and MCP
(``server/errors.validation_message`` serves both; audit29's leftover). Fails before."""

from __future__ import annotations

import httpx2
import pytest

from memstrata import Filters, Scope
from memstrata.server.errors import validation_message
from server.conftest import Served

U = "/v1/users/alice"


@pytest.mark.parametrize("number", [b"NaN", b"Infinity", b"-Infinity"])
def test_a_non_finite_importance_says_to_send_a_finite_number(
    served: Served, number: bytes
) -> None:
    r = served.client.post(
        f"{U}/memories",
        content=b'{"content": "I keep bees", "importance": ' + number + b"}",
        headers={**served.h(served.admin), "content-type": "application/json"},
    )
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    assert "importance" in message and "send a finite number" in message, message
    assert "smaller" not in message and "larger" not in message
    assert served.memory.store.list(Scope("acme", "alice"), Filters(include_deleted=True)) == []


def test_a_finite_value_out_of_range_still_says_which_way() -> None:
    errors = [
        {"loc": ("importance",), "type": "less_than_equal", "msg": "too big", "input": 2.0},
        {"loc": ("importance",), "type": "greater_than_equal", "msg": "too small", "input": -1},
    ]
    message, fields = validation_message(errors)
    assert "send a smaller value" in message and "send a larger value" in message
    assert fields == ["importance", "importance"]


def test_mcp_says_the_same(live_server: Served) -> None:
    s = live_server
    headers = {**s.h(s.admin), "Accept": "application/json, text/event-stream"}
    headers |= {"Content-Type": "application/json", "X-Memstrata-User": "alice"}
    body = (
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memory_add",'
        b'"arguments":{"content":"I keep bees","importance":NaN}}}'
    )
    r = httpx2.post(f"{s.url}/mcp", content=body, headers=headers, timeout=30)
    assert r.status_code == 200, r.text
    result = r.json()["result"]
    text = " ".join(part.get("text", "") for part in result["content"])
    assert result["isError"] and "send a finite number" in text, text
    assert "smaller" not in text
    assert s.memory.store.list(Scope("acme", "alice"), Filters(include_deleted=True)) == []
