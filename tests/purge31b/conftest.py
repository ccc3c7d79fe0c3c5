"""A SQLite file, memory:// and a schema on the suite's PostgreSQL (tests/servers.py)."""

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(params=["sqlite", "memory", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'm.db'}"
    elif request.param == "memory":
        yield "memory://"
    else:
        yield request.getfixturevalue("pg_url")
