"""Embeddings are counted by a process without quotas too (quota31).

A ``Memory`` (or a ``memstrata worker``) without ``quotas=`` added nothing to the day's
embedding counters that a process with quotas on the same store reads (``serve
--user-quota``): what it embedded for a user was missed by that user's daily quota
(audit31's finding). Now every write counts its embeddings, with no limit where no quota
applies; what the library derives on its own (episodes, summaries) is counted too and
never refused."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memstrata import FixedClock, Memory, Message, Scope
from memstrata.errors import QuotaExceededError
from memstrata.quota_types import day_key
from memstrata.quotas import Quota, Quotas
from memstrata.records import Role

from .conftest import DAILY

NOW = datetime(2026, 5, 4, 9, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgresql"])
def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'shared.db'}"
    else:
        yield request.getfixturevalue("pg_url")


def _used(mem: Memory, scope: Scope, user: bool = True) -> int:
    key = day_key("emb", scope.tenant, scope.user if user else None, NOW)
    counters: Any = getattr(mem.store, "durable", mem.store)
    return int(counters.counter_values([key])[key])


def test_a_process_without_quotas_counts_into_the_users_day(shared_url: str) -> None:
    clock = FixedClock(NOW)
    quotas = Quotas(per_user=Quota(embeddings_per_day=DAILY))
    served = Memory(shared_url, embedder="hashing", clock=clock, background=False, quotas=quotas)
    worker = Memory(shared_url, embedder="hashing", clock=clock, background=False)
    try:
        alice = Scope("acme", "alice", session="s1")
        worker.add(alice, "alice prefers window seats")
        worker.add_messages(
            alice,
            [
                Message(role=Role.USER, content="book me a flight to Lisbon"),
                Message(role=Role.ASSISTANT, content="done: TAP 1234 on Friday"),
            ],
        )
        assert _used(worker, alice) == 3
        assert _used(worker, alice, user=False) == 3  # the tenant's day too
        served.add(alice, "alice's passport expires in 2031")
        served.add(alice, "alice flies economy")
        with pytest.raises(QuotaExceededError, match=f"used {DAILY}"):
            served.add(alice, "one more than the day allows")
    finally:
        served.close()
        worker.close()


def test_what_the_library_derives_is_counted_and_never_refused(quota_mem: Memory) -> None:
    """``end_session``'s episode is embedded for the user: counted, even over the quota
    (a derived record is never refused, so nothing derived is lost)."""
    alice = Scope("acme", "alice", session="s1")
    quota_mem.add_messages(
        alice,
        [Message(role=Role.USER, content=f"turn {i} about the Lisbon trip") for i in range(DAILY)],
    )
    assert _used(quota_mem, alice) == DAILY
    quota_mem.end_session(alice)  # its episode: the day's quota is full, still written
    assert _used(quota_mem, alice) == DAILY + 1
    with pytest.raises(QuotaExceededError, match=f"used {DAILY + 1}"):
        quota_mem.add(Scope("acme", "alice"), "over the day's quota")
