"""quota34: a store shared by a memory with quotas (it sets the ``quotas:in_use`` flag)
and memories without; a fixed clock; SQLite and PostgreSQL (the suite's server)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.quota_types import day_key
from memstrata.quotas import Quota, Quotas

NOW = datetime(2026, 5, 4, 9, tzinfo=UTC)
ALICE = Scope("acme", "alice", session="s1")


@pytest.fixture(params=["sqlite", "postgresql"])
def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'shared.db'}"
    else:
        yield request.getfixturevalue("pg_url")


def served(url: str, quota: Quota | None = None, **kw: Any) -> Memory:
    """A memory with a per-user quota (default: ``embeddings_per_day=1000``)."""
    quotas = Quotas(per_user=quota or Quota(embeddings_per_day=1000))
    return Memory(
        url, embedder="hashing", clock=FixedClock(NOW), background=False, quotas=quotas, **kw
    )


def used(mem: Any, scope: Scope = ALICE, *, user: bool = True) -> int:
    """Today's embeddings counter of ``scope``'s user (or its tenant), durable."""
    key = day_key("emb", scope.tenant, scope.user if user else None, NOW)
    counters: Any = getattr(mem.store, "durable", mem.store)
    return int(counters.counter_values([key])[key])
