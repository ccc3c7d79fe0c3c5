"""An id in a URL path over its 256 characters: the HTTP API's 422 said "Value should have
at most 256 items after validation, not 300 — send fewer items" (pydantic's words for a
list: a validator before the length check made it count a string as a collection); the
library and MCP say the id is too long. Now: "String should have at most 256 characters,
not 300 — send a shorter string"."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .surfaces import USERS, Surfaces


@pytest.fixture
def surfaces(tmp_path: Path) -> Iterator[Surfaces]:
    s = Surfaces(f"sqlite:///{tmp_path / 'm.db'}", tmp_path)
    yield s
    s.close()


@pytest.mark.parametrize(
    ("method", "path", "field"),
    [
        ("POST", "/v1/users/{long}/memories", "path.user"),
        ("GET", "/v1/users/{long}/memories", "path.user"),
        ("GET", "/v1/users/alice/memories/{long}", "path.record_id"),
        ("DELETE", "/v1/users/alice/memories/{long}", "path.record_id"),
    ],
)
def test_a_long_id_in_a_path_is_counted_in_characters(
    surfaces: Surfaces, method: str, path: str, field: str
) -> None:
    body = {"content": "a note"} if method == "POST" else None
    r = surfaces.http(method, path.format(long="é" * 300), body)
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    assert f"{field}: String should have at most 256 characters, not 300" in message, message
    assert "items" not in message, message
    assert surfaces.snapshot("http")[0] == 0


def test_the_same_id_over_mcp_and_the_library_is_refused_alike(surfaces: Surfaces) -> None:
    answer = surfaces.mcp("memory_add", {"content": "a note"}, user="é" * 300)
    assert answer["result"]["isError"], answer
    assert "longer than 256 characters" in answer["result"]["content"][0]["text"]
    assert all(surfaces.snapshot(s)[0] == 0 for s in USERS)
