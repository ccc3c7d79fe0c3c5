"""Fixtures of the import checks: a fresh memory on each store (SQLite file, memory://,
PostgreSQL schema), and the server suite's app for the HTTP route."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.filters import Filters
from server.conftest import served  # noqa: F401

ALICE = Scope("acme", "alice", session="s1")
USER = Scope("acme", "alice")
BOB = Scope("acme", "bob")

Fresh = Callable[..., Memory]


@pytest.fixture(params=["sqlite", "memory", "postgresql"])
def fresh(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Fresh]:
    """Makes a memory on a store of its own at each call, on the clock given (a
    ``FixedClock`` at 2026-01-01 12:00 UTC otherwise); closed, and its PostgreSQL schema
    dropped, after the test."""
    made: list[Memory] = []
    schemas: list[str] = []

    def make(clock: FixedClock | None = None) -> Memory:
        if request.param == "sqlite":
            url = f"sqlite:///{tmp_path / f'm{len(made)}.db'}"
        elif request.param == "memory":
            url = "memory://"
        else:
            server = request.getfixturevalue("pg_server")
            url = server.url()
            schemas.append(server.schemas[-1])
        clock = clock or FixedClock(datetime(2026, 1, 1, 12, 0, tzinfo=UTC))
        m = Memory(url, embedder="hashing", clock=clock, background=False)
        made.append(m)
        return m

    yield make
    for m in made:
        m.close()
    if schemas:
        server = request.getfixturevalue("pg_server")
        for schema in schemas:
            server.drop(schema)


def export_text(mem: Memory, scope: Scope = USER, *, embeddings: bool = False) -> str:
    buf = io.StringIO()
    mem.export_records(scope, buf, include_embeddings=embeddings)
    return buf.getvalue()


def lines_of(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.split("\n") if line.strip()]


def records_of(text: str) -> list[dict[str, Any]]:
    """The records of an export's record lines (not its past versions), in file order."""
    return [x["record"] for x in lines_of(text) if "record" in x]


def text_of(lines: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(x) + "\n" for x in lines)


def stored(mem: Memory, scope: Scope) -> int:
    """Every record of the user's, deleted ones included."""
    return mem.store.count(scope, Filters(include_deleted=True, include_superseded=True))
