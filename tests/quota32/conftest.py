"""quota32: two memories on one store, one with a daily embeddings quota (``served``, as
``serve --user-quota`` opens it) and one without (``plain``, a ``Memory`` or ``memstrata
worker`` opened without ``quotas=``); a fixed clock, the hashing embedder, no background
thread."""

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
IN_USE = "quotas:in_use"  # the flag's key in the store's meta (memstrata.quotas.IN_USE_KEY)


@pytest.fixture(params=["sqlite", "postgresql"])
def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'shared.db'}"
    else:
        yield request.getfixturevalue("pg_url")


def served(url: str, **kw: Any) -> Memory:
    """A memory as ``serve --user-quota embeddings_per_day=5`` opens it."""
    quotas = Quotas(per_user=Quota(embeddings_per_day=DAILY))
    return Memory(
        url, embedder="hashing", clock=FixedClock(NOW), background=False, quotas=quotas, **kw
    )


def plain(url: str, **kw: Any) -> Memory:
    """A memory without quotas (a script, ``memstrata worker``)."""
    return Memory(url, embedder="hashing", clock=FixedClock(NOW), background=False, **kw)


def used(mem: Memory, scope: Scope = ALICE, *, user: bool = True) -> int:
    """Today's embeddings counter of ``scope``'s user (or its tenant) in the durable store."""
    key = day_key("emb", scope.tenant, scope.user if user else None, NOW)
    counters: Any = getattr(mem.store, "durable", mem.store)
    return int(counters.counter_values([key])[key])


def three_embeddings(mem: Memory, scope: Scope = ALICE) -> None:
    """A note and a batch of two turns: three embeddings asked for by the caller."""
    mem.add(scope, "alice prefers window seats")
    mem.add_messages(
        scope,
        [
            {"role": "user", "content": "book me a flight to Lisbon"},
            {"role": "assistant", "content": "done: TAP 1234 on Friday"},
        ],
    )
