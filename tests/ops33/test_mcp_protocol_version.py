"""An ``MCP-Protocol-Version`` header naming no protocol the server speaks is answered 400
with a one-line -32600 naming the versions it does, before the SDK sees the request: on
``memstrata mcp --transport http`` and on ``memstrata serve``'s ``/mcp`` (real processes).

Before session 33 the SDK sent such a request to its 2026-07-28 entry, whose -32602 said
"params._meta must be an object carrying the required 'io.modelcontextprotocol/
protocolVersion' and 'io.modelcontextprotocol/clientCapabilities' envelope keys": nothing
a client of another version could act on."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx2
import pytest

from memstrata.server.keys import SQLiteKeyStore
from serving import Running, mcp_http, serve

SPOKEN = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
LIST = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}


@pytest.fixture(scope="module", params=["mcp", "serve"])
def endpoint(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, dict[str, str]]]:
    tmp = tmp_path_factory.mktemp("version")
    db = tmp / "v.db"
    keys = SQLiteKeyStore(str(db))
    key = keys.create("acme").secret
    keys.close()
    headers = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json", "Authorization": f"Bearer {key}",
               "X-Memstrata-User": "alice"}  # fmt: skip
    running: Running
    if request.param == "mcp":
        with mcp_http(f"sqlite:///{db}", tmp, "--rate-limit", "0") as running:
            yield running.url, headers
    else:
        with serve(f"sqlite:///{db}", tmp, "--rate-limit", "0") as running:
            yield running.url + "/mcp", headers
    assert "Traceback" not in running.log_text(), running.log_text()[-3000:]


def _post(endpoint: tuple[str, dict[str, str]], version: str | None) -> httpx2.Response:
    url, headers = endpoint
    if version is not None:
        headers = {**headers, "MCP-Protocol-Version": version}
    return httpx2.post(url, content=json.dumps(LIST).encode(), headers=headers, timeout=60)


@pytest.mark.parametrize("version", ["1999-01-01", "2025-06-19", "latest", "x" * 500])
def test_an_unknown_version_is_told_what_to_send(
    endpoint: tuple[str, dict[str, str]], version: str
) -> None:
    r = _post(endpoint, version)
    assert r.status_code == 400, r.text
    answer = r.json()
    assert answer["id"] == 7 and answer["error"]["code"] == -32600, answer
    message = answer["error"]["message"]
    assert "\n" not in message and len(message) < 400, message
    assert f'MCP-Protocol-Version "{version[:64]}' in message, message
    assert all(v in message for v in SPOKEN), message
    assert "_meta" not in message, message


@pytest.mark.parametrize("version", [None, "2025-06-18", "2025-11-25"])
def test_a_known_version_or_none_is_served(
    endpoint: tuple[str, dict[str, str]], version: str | None
) -> None:
    r = _post(endpoint, version)
    assert r.status_code == 200 and "tools" in r.json()["result"], r.text


def test_the_2026_protocol_stays_the_sdks(endpoint: tuple[str, dict[str, str]]) -> None:
    """A request of the 2026-07-28 protocol without its envelope: the SDK's own answer,
    which is about that protocol's ``params._meta``, as it should be."""
    r = _post(endpoint, "2026-07-28")
    assert r.status_code == 400 and "_meta" in r.json()["error"]["message"], r.text
