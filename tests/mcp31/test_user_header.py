"""The MCP endpoint's user and session headers: spaces and tabs around a value are no part
of it (RFC 9110 §5.5), and a user or session header given twice is refused (session 31).

Before, ``X-Memstrata-User: dave␠␠`` wrote into the user ``"dave  "`` under uvicorn's
httptools parser (which keeps trailing whitespace), and a header given twice (a client's
and a proxy's) wrote into the last one without a word. The REST API takes no such headers:
its user and session are in the request's path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.datastructures import Headers

from memstrata.errors import ValidationError
from memstrata.mcp_server.identity import Identity
from memstrata.server.keys import SQLiteKeyStore


@pytest.fixture
def http_identity(tmp_path: Path) -> Iterator[tuple[Identity, str]]:
    keys = SQLiteKeyStore(str(tmp_path / "k.db"))
    secret = keys.create("acme", role="admin").secret
    yield Identity(keys=keys, session="default"), secret
    keys.close()


def _headers(secret: str, *fields: tuple[str, str]) -> Headers:
    raw = [(b"authorization", f"Bearer {secret}".encode())]
    raw += [(k.lower().encode(), v.encode("utf-8")) for k, v in fields]
    return Headers(raw=raw)


@pytest.mark.parametrize("value", ["dave  ", "  dave", "\tdave\t", " \t dave \t "])
def test_spaces_and_tabs_around_the_user_are_no_part_of_it(
    http_identity: tuple[Identity, str], value: str
) -> None:
    identity, secret = http_identity
    scope = identity.scope(_headers(secret, ("X-Memstrata-User", value)))
    assert scope.user == "dave"
    fields = [("X-Memstrata-User", "d"), ("X-Memstrata-Session", value)]
    session = identity.scope(_headers(secret, *fields))
    assert session.session == "dave"


def test_inner_spaces_and_utf8_are_kept(http_identity: tuple[Identity, str]) -> None:
    identity, secret = http_identity
    scope = identity.scope(_headers(secret, ("X-Memstrata-User", " café au lait ")))
    assert scope.user == "café au lait"


@pytest.mark.parametrize("name", ["X-Memstrata-User", "X-Memstrata-Session", "x-memstrata-user"])
def test_a_user_or_session_header_given_twice_is_refused(
    http_identity: tuple[Identity, str], name: str
) -> None:
    identity, secret = http_identity
    fields = [("X-Memstrata-User", "alice")] if "session" in name.lower() else []
    with pytest.raises(ValidationError, match="given twice.*send it once"):
        identity.scope(_headers(secret, *fields, (name, "alice"), (name.upper(), "carol")))


def test_a_blank_user_header_falls_back_as_an_absent_one(
    http_identity: tuple[Identity, str],
) -> None:
    identity, secret = http_identity
    with pytest.raises(ValidationError, match="no user"):
        identity.scope(_headers(secret, ("X-Memstrata-User", " \t ")))
