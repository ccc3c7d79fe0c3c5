"""The URL of a SQLite file and of a PostgreSQL schema on the suite's real server: the two
stores with schema migrations (memory:// holds nothing across opens)."""

from pathlib import Path

import pytest


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'm.db'}"
    return str(request.getfixturevalue("pg_url"))
