"""The server suite's fixtures (a real SQLite memory, its key store and app, a live
uvicorn server), for the audit's HTTP and MCP checks, and a Memory on each store."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata import Memory
from server.conftest import live_server, served  # noqa: F401


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    """A Memory on each store (the hashing embedder, the real clock, no background
    thread); the suite's own ``mem`` runs on a fixed clock."""
    if request.param == "memory":
        url = "memory://"
    elif request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'm.db'}"
    else:
        url = request.getfixturevalue("pg_server").url()
    m = Memory(url, embedder="hashing", background=False)
    yield m
    m.close()
