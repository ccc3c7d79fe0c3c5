"""Fixtures for the AsyncMemory tests: store URLs in pairs, deterministic ids."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


@pytest.fixture(params=["sqlite", "postgresql"])
def url_pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Two empty stores of one kind: one for ``Memory``, one for ``AsyncMemory``."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'sync.db'}", f"sqlite:///{tmp_path / 'async.db'}"
        return
    server = request.getfixturevalue("pg_server")
    schemas = ["t_" + uuid.uuid4().hex[:16] for _ in range(2)]
    yield server.url(schemas[0]), server.url(schemas[1])
    for schema in schemas:
        server.drop(schema)


@pytest.fixture
def deterministic_ids(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Record and job ids from a counter (``uuid4`` is memstrata's only source of ids), so
    two runs of one script produce identical records; call the result to restart the count."""
    import memstrata.jobs

    counter = iter(())  # replaced by reset()

    def reset() -> None:
        nonlocal counter
        counter = iter(range(1, 10**9))

    def fake_uuid4() -> uuid.UUID:
        return uuid.UUID(int=next(counter))

    reset()
    monkeypatch.setattr(uuid, "uuid4", fake_uuid4)
    monkeypatch.setattr(memstrata.jobs, "uuid4", fake_uuid4)
    return reset
