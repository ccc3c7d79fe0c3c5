"""Stores for the mid-migration tests: a SQLite file, a PostgreSQL schema searched exactly
(the in-process matrix), and one searched through pgvector's HNSW index (``exact_below=0``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(params=["sqlite", "postgresql", "postgresql-hnsw"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'm.db'}"
        return
    server = request.getfixturevalue("pg_server")
    schema = "t_" + uuid.uuid4().hex[:16]
    options = {"exact_below": 0} if request.param == "postgresql-hnsw" else {}
    try:
        yield server.url(schema, **options)
    finally:
        server.drop(schema)
