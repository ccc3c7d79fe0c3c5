"""A closed memory says so, on every backend, and for every way in (session 21).

Before: the sync ``Memory`` on ``memory://`` kept working after ``close()`` (adds, searches,
contexts — on a store that ``close`` had half cleared), SQLite said "could not start a read
transaction: Cannot operate on a closed database", PostgreSQL "lost the connection ...
check that the server is up", and a layer namespace taken before ``close()`` (``f =
mem.facts``) reached the store even on the async memory, which checks its own calls."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memstrata import Memory, Scope
from memstrata.aio import AsyncMemory
from memstrata.errors import StoreError

S = Scope("t", "u")
FACT = {"category": "profile", "key": "city", "value": "Paris", "confidence": 0.9}


@pytest.fixture(params=["memory", "sqlite", "postgresql", "postgresql+redis"])
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    url = f"sqlite:///{tmp_path / 'm.db'}" if request.param == "sqlite" else "memory://"
    if request.param.startswith("postgresql"):
        url = request.getfixturevalue("pg_url")
    buffer = request.getfixturevalue("redis_buffer_url") if "redis" in request.param else None
    yield {"url": url, "embedder": "hashing", "background": False, "buffer": buffer}


CALLS: dict[str, Callable[[Memory, Any], object]] = {
    "add": lambda m, f: m.add(S, "again"),
    "search": lambda m, f: m.search(S, "hello"),
    "build_context": lambda m, f: m.build_context(S, "hello"),
    "list": lambda m, f: m.list(S),
    "facts.upsert (namespace taken before close)": lambda m, f: f.upsert(S, FACT),
    "facts.get (namespace taken before close)": lambda m, f: f.get(S, "city"),
}


@pytest.mark.parametrize("call", CALLS)
def test_sync_calls_after_close_say_the_memory_is_closed(opened: dict[str, Any], call: str) -> None:
    m = Memory(opened["url"], **{k: v for k, v in opened.items() if k != "url"})
    m.add(S, "hello world")
    facts = m.facts
    m.close()
    with pytest.raises(StoreError, match="closed") as caught:
        CALLS[call](m, facts)
    assert "lost the connection" not in str(caught.value)
    m.close()  # a second close is harmless


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])  # memory:// keeps nothing
def test_what_was_written_before_close_is_kept(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}" if kind == "sqlite" else ""
    if kind == "postgresql":
        url = request.getfixturevalue("pg_url")
    kw: dict[str, Any] = {"embedder": "hashing", "background": False}
    m = Memory(url, **kw)
    m.add(S, "hello world")
    m.close()
    with Memory(url, **kw) as again:
        assert [r.text for r in again.list(S)] == ["hello world"]


def test_async_namespace_taken_before_close(opened: dict[str, Any]) -> None:
    async def main() -> None:
        m = AsyncMemory(opened["url"], **{k: v for k, v in opened.items() if k != "url"})
        await m.add(S, "hello world")
        facts = m.facts
        await m.aclose()
        with pytest.raises(StoreError, match="closed") as caught:
            await facts.upsert(S, FACT)
        assert "lost the connection" not in str(caught.value)
        with pytest.raises(StoreError, match="closed"):
            await m.search(S, "hello")

    asyncio.run(main())
