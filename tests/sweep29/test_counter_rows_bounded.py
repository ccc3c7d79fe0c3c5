"""Counters of past days and windows are deleted, not kept forever (session 29).

A user's daily quota counter (``quota:emb:<user>:<day>``, and the tenant's) was one row of
``meta`` per day the user wrote, kept until the user was purged: a year of 1M daily users
was 365M rows. A rate-limit window's counter (``rate:<key>:<window>``) was forgotten only by
the process that held the key; a key it dropped (``max_keys``) or held when it restarted
kept its rows. Now a take that creates a new day's (window's) row deletes, in its own
transaction, the rows of that counter older than the day (window) before it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.quota_types import Quota, Quotas, day_key, day_take
from memstrata.ratelimit import SharedRateLimiter
from memstrata.store import open_store
from memstrata.store.counter_types import DAYS_KEPT, SWEEP_ROWS, Take, is_older

DAYS = 30
START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
BOUNDARY = Path(__file__).with_name("boundary.py")
SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(params=["sqlite", "memory", "postgresql", "postgresql+redis"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str | None]]:
    url = f"sqlite:///{tmp_path / 'm.db'}" if request.param == "sqlite" else "memory://"
    if request.param.startswith("postgresql"):
        url = request.getfixturevalue("pg_url")
    buffer = request.getfixturevalue("redis_buffer_url") if "redis" in request.param else None
    yield url, buffer


def _rows(store: Any, prefix: str) -> dict[str, str]:
    items: dict[str, str] = store.meta_items()
    return {k: v for k, v in items.items() if k.startswith(prefix)}


def test_a_user_writing_every_day_keeps_two_days_of_counters(
    store_url: tuple[str, str | None],
) -> None:
    """30 days of writes leave today's and yesterday's counters (user and tenant), not 30
    days' worth each; today's count is exact every day (failed before: 60 rows)."""
    url, buffer = store_url
    clock = FixedClock(START)
    quotas = Quotas(per_user=Quota(embeddings_per_day=10), per_tenant=Quota(embeddings_per_day=50))
    mem = Memory(
        url, embedder="hashing", clock=clock, background=False, buffer=buffer, quotas=quotas
    )
    try:
        alice = Scope("acme", "alice", session="s1")
        store = getattr(mem.store, "durable", mem.store)
        for day in range(DAYS):
            mem.add(alice, f"day {day}: the user wrote one note about topic {day * 7}")
            mem.add(alice, f"day {day}: and a second one about subject {day * 13}")
            today = day_key("emb", "acme", "alice", clock.now())
            assert _rows(store, today) == {today: "2"}
            clock.advance(days=1)
        rows = _rows(store, "quota:emb:")
        # user and tenant: the last day and the DAYS_KEPT before it (quota31; before, one)
        assert len(rows) <= 2 * (DAYS_KEPT + 1), sorted(rows)
        last = clock.now() - timedelta(days=1)
        assert rows[day_key("emb", "acme", "alice", last)] == "2"
        assert rows[day_key("emb", "acme", None, last)] == "2"
    finally:
        mem.close()


def test_a_current_count_survives_the_sweep_and_the_quota_holds(
    store_url: tuple[str, str | None],
) -> None:
    """The day a sweep runs and the day before keep their counts: a process whose clock
    still reads yesterday finds its counter, and its limit still refuses."""
    url, _ = store_url
    store: Any = open_store(url)
    try:
        d0 = START.replace(hour=23, minute=59, second=59)
        d1 = d0 + timedelta(seconds=2)  # past midnight
        assert store.take_counters([day_take("emb", "acme", "alice", d0, 4, 5)]) is None
        assert store.take_counters([day_take("emb", "acme", "alice", d1, 1, 5)]) is None
        late = store.take_counters([day_take("emb", "acme", "alice", d0, 2, 5)])
        assert late is not None and late.used == 4  # yesterday's 4 are still counted
        assert store.take_counters([day_take("emb", "acme", "alice", d0, 1, 5)]) is None
        k0, k1 = (day_key("emb", "acme", "alice", d) for d in (d0, d1))
        assert store.counter_values([k0, k1]) == {k0: 5, k1: 1}
        d2 = d1 + timedelta(days=DAYS_KEPT)
        assert store.take_counters([day_take("emb", "acme", "alice", d2, 1, 5)]) is None
        k2 = day_key("emb", "acme", "alice", d2)
        # d0, DAYS_KEPT + 1 days before d2, went (quota31: the week before stays)
        assert _rows(store, "quota:emb:") == {k1: "1", k2: "1"}
        # another user's counters and other meta rows are not a family's
        assert store.take_counters([day_take("emb", "acme", "bob", d0, 1, 5)]) is None
        later = d2 + timedelta(days=5)
        assert store.take_counters([day_take("emb", "acme", "alice", later, 1, 5)]) is None
        assert day_key("emb", "acme", "bob", d0) in _rows(store, "quota:emb:")
    finally:
        store.close()


def test_rate_windows_of_dropped_keys_do_not_pile_up(store_url: tuple[str, str | None]) -> None:
    """Keys the process keeps no window for (``max_keys=1``: every other key is dropped, as
    after a restart) still lose their old windows' rows when they refill again (failed
    before: a row per key and window, 20 keys x 100 windows)."""
    url, _ = store_url
    store: Any = open_store(url)
    now = [1_000_000.0]
    try:
        limiter = SharedRateLimiter(10.0, 10, fallback=store, clock=lambda: now[0], max_keys=1)
        for _ in range(100):  # windows of 1 s
            for k in range(20):
                assert limiter.acquire(f"key:{k}") == 0.0
            now[0] += 1.0
        rows = _rows(store, "rate:")
        assert len(rows) <= 20 * 3, len(rows)
    finally:
        store.close()


def test_the_sweep_reads_periods_in_order() -> None:
    assert is_older("999", "1000") and not is_older("1000", "999")  # windows by value
    assert is_older("2026-01-01", "2026-01-02") and not is_older("2026-01-02", "2026-01-02")
    assert not is_older("override", "2026-01-02") and not is_older("a:5", "7")
    with pytest.raises(Exception, match="family"):
        Take("quota:emb:x:2026-01-01", 1, None, None, "quota:emb:y:", "2025-12-31")


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_processes_on_both_sides_of_midnight_lose_no_count(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """One process still before midnight, one after, both taking the same user's counter
    at once: the new day's first take sweeps, and neither day loses a count."""
    url = f"sqlite:///{tmp_path / 'm.db'}"
    if kind == "postgresql":
        url = request.getfixturevalue("pg_url")
    open_store(url).close()  # the schema, before the processes race
    go, n = tmp_path / "go", 200
    before = START.replace(hour=23, minute=59, second=59, microsecond=900_000)
    after = before + timedelta(seconds=0.2)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    first = tmp_path / "first-before-midnight"
    # the process after midnight starts once one before midnight has counted: its first
    # take (the one that makes the new day's row and sweeps) meets a count to keep
    runs = [(before, first, None), (after, None, first), (before, None, None)]
    procs = [
        subprocess.Popen(
            [sys.executable, str(BOUNDARY), url, when.isoformat(), str(n), str(go)]
            + [str(p) if p else "-" for p in (mark, wait)],
            env=env,
        )
        for when, mark, wait in runs
    ]
    go.touch()
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0]
    store: Any = open_store(url)
    try:
        k0, k1 = (day_key("emb", "acme", "alice", d) for d in (before, after))
        assert store.counter_values([k0, k1]) == {k0: 2 * n, k1: n}
    finally:
        store.close()


def test_the_async_postgresql_store_sweeps_too(pg_url: str) -> None:
    """The async store (AsyncMemory on PostgreSQL) runs the same SQL, natively async."""
    import asyncio

    from memstrata.aio.pg_store import open_postgres

    async def main() -> dict[str, str]:
        store: Any = await open_postgres(pg_url)
        try:
            for day in range(10):
                now = START + timedelta(days=day)
                take = day_take("emb", "acme", "alice", now, 1, 3)
                assert await store.take_counters([take]) is None
            return {k: v for k, v in (await store.meta_items()).items() if "quota:emb:" in k}
        finally:
            await store.aclose()

    rows = asyncio.run(main())
    days = [START + timedelta(days=d) for d in range(9 - DAYS_KEPT, 10)]
    assert rows == {day_key("emb", "acme", "alice", d): "1" for d in days}


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_rows_kept_from_before_go_a_bounded_batch_per_new_day(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A store written before session 29 holds a row per past day: each new day's first
    take deletes at most SWEEP_ROWS of them (bounded work), the oldest first."""
    url = f"sqlite:///{tmp_path / 'm.db'}"
    if kind == "postgresql":
        url = request.getfixturevalue("pg_url")
    store: Any = open_store(url)
    try:
        for d in range(100):  # 100 days of history, as the old code left them
            store.set_meta(day_key("emb", "acme", "alice", START - timedelta(days=100 - d)), "1")
        assert store.take_counters([day_take("emb", "acme", "alice", START, 1, None)]) is None
        assert len(_rows(store, "quota:emb:")) == 101 - SWEEP_ROWS
        later = START + timedelta(days=1)
        assert store.take_counters([day_take("emb", "acme", "alice", later, 1, None)]) is None
        kept = [START + timedelta(days=d) for d in range(1 - DAYS_KEPT, 2)]  # the week before
        assert _rows(store, "quota:emb:") == {day_key("emb", "acme", "alice", d): "1" for d in kept}
    finally:
        store.close()


def test_memory_index_forgets_families_whose_rows_are_gone() -> None:
    """memory://'s index of families holds what ``meta`` holds: a user purged (their rows
    deleted) leaves no entry behind once later takes have looked at it."""
    from memstrata.store.counter_types import CounterFamilies, take_in

    meta: dict[str, str] = {}
    families = CounterFamilies()
    for u in range(1_000):
        assert take_in(meta, [day_take("emb", "acme", f"u{u}", START, 1, None)], families) is None
        meta.clear()  # every user purged right after: nothing of theirs stays
    assert len(families) <= 2
    for day in range(10):  # one user over days: their family holds DAYS_KEPT + 1 days
        now = START + timedelta(days=day)
        assert take_in(meta, [day_take("emb", "acme", "alice", now, 1, None)], families) is None
    kept = [
        day_key("emb", "acme", "alice", START + timedelta(days=d)) for d in range(9 - DAYS_KEPT, 10)
    ]
    assert sorted(meta) == kept
