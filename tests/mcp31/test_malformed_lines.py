"""Each stdio line the SDK would drop unanswered gets its JSON-RPC 2.0 error, and ``/mcp``
over HTTP answers the same messages with the same code (session 31).

Over stdio the SDK's reader drops a line it cannot parse or validate, so a client that sent
``{not json``, a batch, or ``"jsonrpc": "1.0"`` waited for an answer that never came.
:class:`CheckedLines` now answers: not JSON -32700 with id null; JSON that is no JSON-RPC 2.0
message (a batch, no object, another version, an id of another type, no method) -32600;
params the SDK cannot take -32602, with the request's id when it has one. Over HTTP the SDK
answered the -32600 ones with -32602 and its validator's dump; ``_RequireKey`` answers them
-32600 first. Before the fix every line below but the good ones got no answer over stdio."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest
from mcp.shared.message import SessionMessage

from memstrata.mcp_server.server import _refused_request
from memstrata.mcp_server.stdio import CheckedLines
from memstrata.server.keys import SQLiteKeyStore
from serving import Running, mcp_http

LIST = '{"jsonrpc":"2.0","id":%s,"method":"tools/list"}'
# line, the code it is answered with, the id of the answer
CASES = [
    ("{not json", -32700, None),
    ('{"jsonrpc":"2.0","id":1,"method":"tools/list"', -32700, None),  # cut short
    ("[" * 100_000, -32700, None),  # nested too deeply for any parser here
    (LIST.replace('"tools/list"', '"tools/list","params":{"a":"\\ud800"}') % "3", -32700, None),
    ("[" + LIST % "1" + "," + LIST % "2" + "]", -32600, None),  # a batch
    ("[]", -32600, None),
    ("5", -32600, None),
    ('"tools/list"', -32600, None),
    ("null", -32600, None),
    (LIST % "1.5", -32600, None),
    (LIST % "null", -32600, None),
    (LIST % "[3]", -32600, None),
    (LIST % "true", -32600, None),
    ('{"jsonrpc":"1.0","id":11,"method":"tools/list"}', -32600, 11),
    ('{"id":12,"method":"tools/list"}', -32600, 12),  # no "jsonrpc"
    ('{"jsonrpc":"2.0","id":13,"method":7}', -32600, 13),  # a method of another type
    ('{"jsonrpc":"2.0","id":14}', -32600, None),  # neither request nor response
    ('{"jsonrpc":"2.0","id":"s","method":"tools/call","params":[1]}', -32602, "s"),
    ('{"jsonrpc":"2.0","id":16,"method":"tools/call","params":"x"}', -32602, 16),
]


async def _answers(lines: list[str]) -> tuple[list[str], list[dict[str, Any]]]:
    async def source() -> Any:
        for line in lines:
            yield line + "\n"

    checked = CheckedLines(source())
    send, receive = anyio.create_memory_object_stream[SessionMessage](100)
    checked.answer_with(send)
    with send, receive:
        passed = [line async for line in checked]
        send.close()
        answers = [m.message.model_dump(by_alias=True, exclude_unset=True) async for m in receive]
    return passed, answers


@pytest.mark.parametrize(("line", "code", "rid"), CASES, ids=[c[0][:40] for c in CASES])
def test_a_line_the_sdk_drops_is_answered(line: str, code: int, rid: Any) -> None:
    good = LIST % "99"
    passed, answers = anyio.run(_answers, [good, line, "", "  \t", good])
    assert passed == [good + "\n", good + "\n"]  # the next good line still goes on; blanks not
    [answer] = answers
    assert answer["jsonrpc"] == "2.0" and answer["id"] == rid, answer
    assert answer["error"]["code"] == code and answer["error"]["message"], answer
    assert "validation error" not in answer["error"]["message"].lower(), answer  # no dump


def test_a_good_message_passes_unanswered() -> None:
    lines = [
        LIST % "1",
        LIST % '"a"',
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        '{"jsonrpc":"2.0","id":3,"result":{}}',
        '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","arguments":{}}}',
    ]
    passed, answers = anyio.run(_answers, lines)
    assert passed == [line + "\n" for line in lines] and answers == []


@pytest.fixture(scope="module")
def mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Running, str]]:
    tmp = tmp_path_factory.mktemp("mcp31")
    db = tmp / "m.db"
    keys = SQLiteKeyStore(str(db))
    key = keys.create("acme").secret
    keys.close()
    with mcp_http(f"sqlite:///{db}", tmp, "--rate-limit", "0") as m:
        yield m, key
    assert "Traceback" not in m.log_text(), m.log_text()[-3000:]


def test_http_answers_as_stdio_does(mcp: tuple[Running, str]) -> None:
    """The same lines as ``/mcp`` bodies: the same code (id: null where the SDK answers,
    for a parse error or params it cannot take; the request's where memstrata does)."""
    m, key = mcp
    headers = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json", "MCP-Protocol-Version": "2025-06-18",
               "Authorization": f"Bearer {key}", "X-Memstrata-User": "alice"}  # fmt: skip
    for line, code, rid in CASES:
        r = httpx2.post(m.url, content=line.encode(), headers=headers, timeout=60)
        error = r.json()["error"]
        assert r.status_code == 400 and error["code"] == code, (line[:80], r.text[:300])
        if code == -32600:
            assert r.json()["id"] == rid and "alidation error" not in error["message"], r.text
    ok = httpx2.post(m.url, content=(LIST % "1").encode(), headers=headers, timeout=60)
    assert ok.status_code == 200 and "tools" in ok.json()["result"], ok.text


def test_the_refusal_names_what_was_wrong() -> None:
    batch = _refused_request(("[" + LIST % "1" + "]").encode())
    assert batch is not None and "batch" in batch[0] and "2025-06-18" in batch[0]
    version = _refused_request(b'{"jsonrpc":"1.0","id":11,"method":"tools/list"}')
    assert version is not None and '"1.0"' in version[0] and version[1] == 11
    assert _refused_request((LIST % "1").encode()) is None
    assert _refused_request(b"{not json") is None  # the SDK's parse error, as before
