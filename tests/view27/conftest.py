"""A Memory on each store (memory://, SQLite, PostgreSQL on the suite's real server) and the
server suite's fixtures (a real SQLite memory, its key store and app, a live uvicorn
server), for the checks of what a caller is shown of a record shared with them."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata import Memory
from server.conftest import live_server, served  # noqa: F401


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    """A Memory on each store (the hashing embedder, the real clock, no background thread)."""
    if request.param == "memory":
        url = "memory://"
    elif request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'm.db'}"
    else:
        url = request.getfixturevalue("pg_url")
    m = Memory(url, embedder="hashing", background=False)
    yield m
    m.close()


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of each store, for an AsyncMemory a test opens itself."""
    if request.param == "memory":
        return "memory://"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'a.db'}"
    return str(request.getfixturevalue("pg_url"))
