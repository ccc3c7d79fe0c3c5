"""``top_k`` and ``token_budget`` through every way in: what the library refuses (0, a
negative, a bool, a float, a string of digits, a huge number) no surface accepts. MCP's
tools have narrower ranges of their own (``top_k`` 1-100, ``token_budget`` 64-200,000)
and the HTTP API caps a budget at 2,000,000 (the library at 10,000,000): inside every
range all accept.

Before session 34 MCP's tools read their arguments laxly (the SDK's models): ``"top_k":
true`` was 1, ``"3"`` was 3, ``2.0`` was 2, ``"token_budget": "500"`` was 500 and
``"importance": true`` stored 1.0, which the HTTP API (strict models) and the library
refuse."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata.errors import MemstrataError

from .surfaces import USERS, Surfaces

numbers = st.one_of(
    st.integers(-3, 1005),
    st.integers(),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(1, 50).map(float),
    st.integers(-5, 2000).map(str),
    st.none(),
)
budgets = st.one_of(
    numbers, st.integers(60, 70), st.integers(199_990, 200_010), st.integers(1_999_990, 2_000_010)
)


@pytest.fixture
def surfaces(tmp_path: Path) -> Iterator[Surfaces]:
    s = Surfaces(f"sqlite:///{tmp_path / 'm.db'}", tmp_path)
    s.mem.add(s.scope("lib"), "lisbon is where she lives")
    yield s
    s.close()


def _lib(call: Any) -> bool:
    try:
        call()
    except MemstrataError:
        return False
    return True


def _mcp_ok(s: Surfaces, tool: str, args: dict[str, Any]) -> bool:
    answer = s.mcp(tool, args, user=USERS["lib"])
    assert "result" in answer, answer
    text = answer["result"]["content"][0]["text"]
    assert "Traceback" not in text, text
    return not answer["result"].get("isError")


SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(top_k=numbers)
def test_top_k(surfaces: Surfaces, top_k: Any) -> None:
    s, scope = surfaces, surfaces.scope("lib")
    lib = _lib(lambda: s.mem.search(scope, "lisbon", top_k=top_k))
    aio = _lib(lambda: s.loop.run_until_complete(s.amem.search(scope, "lisbon", top_k=top_k)))
    r = s.http("POST", f"/v1/users/{USERS['lib']}/search", {"query": "lisbon", "top_k": top_k})
    assert r.status_code in (200, 400, 422), r.text
    mcp = _mcp_ok(s, "memory_search", {"query": "lisbon", "top_k": top_k})
    assert lib == aio == (r.status_code == 200), (top_k, r.text)
    assert mcp == (lib and top_k <= 100), top_k


@SETTINGS
@given(budget=budgets)
def test_token_budget(surfaces: Surfaces, budget: Any) -> None:
    s, scope = surfaces, surfaces.scope("lib")
    lib = _lib(lambda: s.mem.build_context(scope, "lisbon", budget))
    aio = _lib(lambda: s.loop.run_until_complete(s.amem.build_context(scope, "lisbon", budget)))
    body = {"query": "lisbon", "token_budget": budget}
    r = s.http("POST", f"/v1/users/{USERS['lib']}/context", body)
    assert r.status_code in (200, 400, 422), r.text
    mcp = _mcp_ok(s, "memory_context", {"query": "lisbon", "token_budget": budget})
    assert lib == aio, budget
    assert (r.status_code == 200) == (lib and budget <= 2_000_000), (budget, r.text)
    assert mcp == (lib and 64 <= budget <= 200_000), budget


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("memory_add", {"content": "a note", "importance": True}),
        ("memory_add", {"content": "a note", "importance": "0.5"}),
        ("memory_search", {"query": "lisbon", "top_k": "3"}),
        ("memory_search", {"query": "lisbon", "top_k": True}),
        ("memory_search", {"query": "lisbon", "top_k": 2.0}),
        ("memory_context", {"token_budget": "500"}),
        ("memory_list", {"limit": True}),
        ("memory_list", {"offset": "0"}),
        ("key_memory_set", {"text": "pinned", "priority": "5"}),
    ],
)
def test_mcp_reads_arguments_as_the_http_api_does(
    surfaces: Surfaces, tool: str, args: dict[str, Any]
) -> None:
    before = surfaces.snapshot("lib")
    answer = surfaces.mcp(tool, args, user=USERS["lib"])
    result = answer["result"]
    assert result["isError"], result
    assert f"invalid arguments for {tool}" in result["content"][0]["text"], result
    assert surfaces.snapshot("lib") == before
