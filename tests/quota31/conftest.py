"""quota31's Memory on each store with a daily embeddings quota (a fixed clock, the
hashing embedder, no background thread)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstrata import FixedClock, Memory
from memstrata.quotas import Quota, Quotas

DAILY = 5


@pytest.fixture(params=["sqlite", "memory", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'q.db'}"
    elif request.param == "memory":
        yield "memory://"
    else:
        yield request.getfixturevalue("pg_url")


@pytest.fixture
def day_clock() -> FixedClock:
    return FixedClock(datetime(2026, 5, 4, 9, tzinfo=UTC))


@pytest.fixture
def quota_mem(store_url: str, day_clock: FixedClock) -> Iterator[Memory]:
    m = Memory(
        store_url,
        embedder="hashing",
        clock=day_clock,
        background=False,
        quotas=Quotas(per_user=Quota(embeddings_per_day=DAILY)),
    )
    yield m
    m.close()
