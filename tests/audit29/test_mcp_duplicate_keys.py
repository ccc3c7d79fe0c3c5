"""MCP tool arguments naming a key twice. The SDK parses a message with pydantic, which
keeps the last value: ``{"content": "I keep bees", "content": "I keep wasps"}`` stored
"I keep wasps" and dropped the other without a word, over HTTP and stdio, while the HTTP API
refuses such a body (``server/strict_json.py``, session 28). Session 29's audit: a JSON-RPC
"Invalid Request" error with the request's id, naming the key, nothing written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata import Filters, Memory, Scope
from memstrata.mcp_server.server import _refused_request
from server.conftest import Served
from stdio_mcp import StdioServer

TWICE = (
    b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"memory_add",'
    b'"arguments":{"content":"I keep bees","content":"I keep wasps"}}}'
)
NESTED = (  # the key twice inside a list's object: the method's params
    b'{"jsonrpc":"2.0","id":"x1","method":"tools/call","params":{"name":"memory_add",'
    b'"name":"memory_delete","arguments":{"content":"I keep bees"}}}'
)
GOOD = (
    b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"memory_add",'
    b'"arguments":{"content":"I keep bees"}}}'
)


def _everything(memory: Memory, user: str) -> list[str]:
    everything = Filters(include_deleted=True)
    return [r.content.raw for r in memory.list(Scope("acme", user), filters=everything)]


def test_http_refuses_a_key_given_twice(live_server: Served) -> None:
    s = live_server
    headers = {**s.h(s.admin), "Accept": "application/json, text/event-stream"}
    headers |= {"Content-Type": "application/json", "X-Memstrata-User": "alice"}
    for body, rid, key in ((TWICE, 7, "content"), (NESTED, "x1", "name")):
        r = httpx2.post(f"{s.url}/mcp", content=body, headers=headers, timeout=30)
        assert r.status_code == 400, r.text
        answer = r.json()
        assert answer["id"] == rid and answer["error"]["code"] == -32600, answer
        assert f"the key {key!r} twice" in answer["error"]["message"], answer
    assert _everything(s.memory, "alice") == []
    r = httpx2.post(f"{s.url}/mcp", content=GOOD, headers=headers, timeout=30)
    assert r.status_code == 200 and not r.json()["result"]["isError"], r.text
    assert _everything(s.memory, "alice") == ["I keep bees"]


def _stdio_session(db: Path, lines: list[bytes], expect: int) -> list[dict[str, Any]]:
    server = StdioServer(db)  # the initialize handshake: its answer is the first
    try:
        server.send(b"\n".join(lines) + b"\n")
        got = [server.init_answer, *(server.answer() for _ in range(expect - 1))]
    finally:
        rc, err = server.close()  # stdin closed: the server stops
    assert rc == 0, err[-2000:]
    assert server.answers.empty(), server.answers.get()  # nothing more (the notification)
    return [a for a in got if a is not None]


def test_stdio_refuses_a_key_given_twice(tmp_path: Path) -> None:
    db = tmp_path / "stdio.db"
    twice_notified = b'{"jsonrpc":"2.0","method":"notifications/x","method":"y"}'
    answers = _stdio_session(db, [TWICE, twice_notified, NESTED, GOOD], expect=4)
    by_id = {a.get("id"): a for a in answers}
    assert set(by_id) == {0, 7, "x1", 8}, answers
    for rid, name in ((7, "content"), ("x1", "name")):
        assert by_id[rid]["error"]["code"] == -32600, by_id[rid]
        assert f"the key {name!r} twice" in by_id[rid]["error"]["message"]
    assert by_id[8]["result"]["isError"] is False, by_id[8]
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as memory:
        assert _everything(memory, "alice") == ["I keep bees"]


# --- the check itself, over generated messages ------------------------------------------------
_names = st.text(alphabet='abc\u00e9\u4e2d"\\', min_size=0, max_size=3)


def _render(value: Any) -> str:
    """JSON text of ``value``, where a list of (key, value) pairs is an object (so a key may
    come twice)."""
    if isinstance(value, tuple):
        return "{" + ",".join(f"{json.dumps(k)}:{_render(v)}" for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_render(v) for v in value) + "]"
    return json.dumps(value)


def _twice(value: Any) -> bool:
    if isinstance(value, tuple):
        keys = [k for k, _ in value]
        return len(keys) != len(set(keys)) or any(_twice(v) for _, v in value)
    if isinstance(value, list):
        return any(_twice(v) for v in value)
    return False


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.lists(st.tuples(_names, inner), max_size=4).map(tuple)
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(params=_json, rid=st.integers(min_value=-(2**40), max_value=2**40) | st.text(max_size=4))
def test_a_message_is_refused_exactly_when_an_object_names_a_key_twice(
    params: Any, rid: int | str
) -> None:
    head = '{"jsonrpc":"2.0","id":' + json.dumps(rid)
    body = head + ',"method":"tools/call","params":' + _render(params) + "}"
    refused = _refused_request(body.encode())
    if _twice(params):
        assert refused is not None and "twice" in refused[0], body
        assert refused[1] == rid, body  # answered with the request's own id
    else:
        assert refused is None, (body, refused)
