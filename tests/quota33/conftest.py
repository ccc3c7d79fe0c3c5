"""quota33: one store shared by a memory with quotas (as ``serve --user-quota`` opens it)
and memories without (a script, ``memstrata worker``); a fixed clock, the hashing
embedder, no background thread. SQLite and PostgreSQL (the suite's server)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.quota_types import day_key
from memstrata.quotas import Quota, Quotas

DAILY = 5
NOW = datetime(2026, 5, 4, 9, tzinfo=UTC)
ALICE = Scope("acme", "alice", session="s1")
IN_USE = "quotas:in_use"  # memstrata.quotas.IN_USE_KEY


@pytest.fixture(params=["sqlite", "postgresql"])
def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'shared.db'}"
    else:
        yield request.getfixturevalue("pg_url")


def served(url: str, quota: Quota | None = None, **kw: Any) -> Memory:
    """A memory with a per-user quota (default: ``embeddings_per_day=5``)."""
    quotas = Quotas(per_user=quota or Quota(embeddings_per_day=DAILY))
    return Memory(
        url, embedder="hashing", clock=FixedClock(NOW), background=False, quotas=quotas, **kw
    )


def plain(url: str, **kw: Any) -> Memory:
    """A memory without quotas."""
    kw.setdefault("embedder", "hashing")
    return Memory(url, clock=FixedClock(NOW), background=False, **kw)


def used(mem: Any, scope: Scope = ALICE, *, user: bool = True) -> int:
    """Today's embeddings counter of ``scope``'s user (or its tenant), durable."""
    key = day_key("emb", scope.tenant, scope.user if user else None, NOW)
    counters: Any = getattr(mem.store, "durable", mem.store)
    return int(counters.counter_values([key])[key])


def records(mem: Any, scope: Scope = ALICE) -> int:
    """Every record of ``scope``'s user, deleted and superseded ones included."""
    from memstrata.filters import Filters

    everything = Filters(include_deleted=True, include_superseded=True)
    return int(mem.store.count(Scope(scope.tenant, scope.user), everything))
