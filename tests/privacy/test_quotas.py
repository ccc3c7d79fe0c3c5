"""Quotas (issue 10 §5): records per user, embeddings per day per user and tenant, context
tokens per request; QuotaExceededError names quota, limit and reset; nothing written on
refusal; a limit below current usage is a ValidationError."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.errors import QuotaExceededError, ValidationError
from memstrata.quotas import Quota, Quotas


@pytest.fixture(params=["sqlite", "memory"])
def qmem(request: pytest.FixtureRequest, tmp_path: Path, clock: FixedClock) -> Iterator[Memory]:
    url = f"sqlite:///{tmp_path / 'q.db'}" if request.param == "sqlite" else "memory://"
    m = Memory(
        url,
        embedder="hashing",
        clock=clock,
        background=False,
        quotas=Quotas(
            per_user=Quota(max_records=5, embeddings_per_day=8, context_tokens=2000),
            per_tenant=Quota(embeddings_per_day=12),
        ),
    )
    yield m
    m.close()


def _n(m: Memory, s: Scope) -> int:
    return len(m.list(s.user_scope, filters={"include_deleted": True}, limit=1000))


def test_max_records_refuses_whole_batches_and_writes_nothing(qmem: Memory) -> None:
    s = Scope("acme", "alice", session="s1")
    qmem.add_messages(s, [{"role": "user", "content": f"turn {i}"} for i in range(4)])
    with pytest.raises(QuotaExceededError) as err:
        qmem.add_messages(s, [{"role": "user", "content": f"more {i}"} for i in range(2)])
    msg = str(err.value)
    assert "max_records" in msg and "limit 5" in msg and "resets" in msg
    assert _n(qmem, s) == 4
    qmem.add(s, "one more fits")
    with pytest.raises(QuotaExceededError):
        qmem.add(s, "this does not")
    assert _n(qmem, s) == 5


def test_embeddings_per_day_reset_at_midnight(qmem: Memory, clock: FixedClock) -> None:
    s = Scope("acme", "bob", session="s1")
    qmem.set_quota(s, Quota(max_records=100, embeddings_per_day=3))
    for i in range(3):
        qmem.add_message(s, "user", f"message {i}")
    with pytest.raises(QuotaExceededError, match=r"embeddings_per_day \(per user\).*limit 3"):
        qmem.add_message(s, "user", "one too many")
    assert _n(qmem, s) == 3
    clock.advance(days=1)
    qmem.add_message(s, "user", "a new day")
    assert _n(qmem, s) == 4


def test_tenant_embeddings_add_up_over_users(qmem: Memory) -> None:
    for user in ("u1", "u2", "u3"):
        s = Scope("acme", user, session="s")
        qmem.add_messages(s, [{"role": "user", "content": f"{user} says {i}"} for i in range(4)])
    with pytest.raises(QuotaExceededError, match=r"per tenant.*limit 12"):
        qmem.add_message(Scope("acme", "u4", session="s"), "user", "over the tenant limit")
    qmem.add_message(Scope("other", "u4", session="s"), "user", "another tenant is fine")


def test_context_tokens_per_request(qmem: Memory) -> None:
    s = Scope("acme", "alice", session="s1")
    qmem.build_context(s, "hello", token_budget=2000)
    with pytest.raises(QuotaExceededError, match=r"context_tokens.*limit 2000"):
        qmem.build_context(s, "hello", token_budget=4000)


def test_a_quota_below_usage_is_refused(qmem: Memory) -> None:
    s = Scope("acme", "carol", session="s1")
    qmem.add_messages(s, [{"role": "user", "content": f"c {i}"} for i in range(3)])
    with pytest.raises(ValidationError, match="below"):
        qmem.set_quota(s, Quota(max_records=2))
    with pytest.raises(ValidationError, match="below"):
        qmem.set_quota(s, Quota(embeddings_per_day=1))
    qmem.add_message(s, "user", "still under the old limit")  # nothing changed
    for bad in (
        lambda: Quota(max_records=0),
        lambda: Quota(context_tokens=-5),
        lambda: Quota(embeddings_per_day=2.5),  # type: ignore[arg-type]
        lambda: Quotas(per_user="lots"),
    ):  # type: ignore[arg-type]
        with pytest.raises(ValidationError):
            bad()


def test_a_purge_removes_the_users_counters(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "c.db"
    m = Memory(
        f"sqlite:///{path}",
        embedder="hashing",
        background=False,
        quotas=Quotas(per_user=Quota(embeddings_per_day=10)),
    )
    s = Scope("acme", "dora", session="s")
    m.add_message(s, "user", "count me")
    m.set_quota(s, Quota(embeddings_per_day=5))
    m.add_message(Scope("acme", "erin", session="s"), "user", "and me")

    def keys() -> list[str]:
        with sqlite3.connect(path) as conn:
            return [k for (k,) in conn.execute("SELECT key FROM meta WHERE key LIKE 'quota:%'")]

    before = keys()
    m.purge(s.user_scope)
    after = keys()
    # dora's daily counter and override are gone; erin's counter and the tenant's stay
    assert len(before) - len(after) == 2 and len(after) == 2
    m.close()
