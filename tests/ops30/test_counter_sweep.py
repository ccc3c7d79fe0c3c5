"""Counter rows of users and keys who never come back go at ``maintain`` (session 30).

Session 29 made the take that creates a counter's row for a new day (a rate window) delete
that counter's older rows; a user who never writes again kept their last two days' rows
(a key its last two or three windows) for ever, until purged. ``maintain``'s last step now
sweeps them store-wide, a bounded batch of ``meta`` rows per pass, never a row still
counting today's (the current window's) usage or the day (window) before it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.quota_types import day_key, day_take
from memstrata.ratelimit import SharedRateLimiter
from memstrata.store import open_store
from memstrata.store.counter_types import SWEEP_EVERY_US, SWEEP_KEY, epoch_us, stale_at_us
from memstrata.store.migrate.copy import copy_store

USERS = 1_000
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
TODAY = START + timedelta(days=10)
BOUNDARY = Path(__file__).resolve().parents[1] / "sweep29" / "boundary.py"
SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(params=["sqlite", "memory", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "postgresql":
        yield request.getfixturevalue("pg_url")
    else:
        yield f"sqlite:///{tmp_path / 'm.db'}" if request.param == "sqlite" else "memory://"


def _durable(mem: Memory) -> Any:
    return getattr(mem.store, "durable", mem.store)


def _counters(store: Any) -> dict[str, str]:
    items: dict[str, str] = store.meta_items()
    return {k: v for k, v in items.items() if k.startswith(("quota:", "rate:"))}


def _stale(store: Any, now: datetime) -> list[str]:
    return [k for k in _counters(store) if (stale_at_us(k) or epoch_us(now) + 1) <= epoch_us(now)]


def test_maintain_sweeps_the_counters_of_users_who_never_came_back(url: str) -> None:
    """1,000 users who wrote on days 0-2 and never again, one user still writing
    yesterday and today: after one ``maintain`` no row of a past day is left, and today's
    and yesterday's counts are intact (failed before: 2,000 rows of the 1,000 users)."""
    _sweep_by_maintain(url, None)


def test_maintain_sweeps_the_store_under_a_redis_buffer(
    tmp_path: Path, redis_buffer_url: str
) -> None:
    _sweep_by_maintain(f"sqlite:///{tmp_path / 'r.db'}", redis_buffer_url)


def _sweep_by_maintain(url: str, buffer: str | None) -> None:
    clock = FixedClock(TODAY)
    mem = Memory(url, embedder="hashing", clock=clock, background=False, buffer=buffer)
    try:
        store = _durable(mem)
        for day in range(3):
            when = START + timedelta(days=day)
            takes = [day_take("emb", "acme", f"u{u}", when, 1, None) for u in range(USERS)]
            for i in range(0, USERS, 100):  # a take per call, as a write sends: 100 a call
                assert store.take_counters(takes[i : i + 100]) is None
        yesterday = TODAY - timedelta(days=1)
        assert store.take_counters([day_take("emb", "acme", "alice", yesterday, 3, None)]) is None
        assert store.take_counters([day_take("emb", "acme", "alice", TODAY, 2, None)]) is None
        # their three days (a day's take keeps the week before it since quota31)
        assert len(_stale(store, TODAY)) == 3 * USERS
        report = mem.maintain(Scope("acme", "alice"))
        assert report.counters_swept == 3 * USERS
        assert _stale(store, TODAY) == []
        kept = {day_key("emb", "acme", "alice", d): v for d, v in ((yesterday, "3"), (TODAY, "2"))}
        assert _counters(store) == kept
    finally:
        mem.close()


def test_rate_windows_of_keys_never_seen_again_are_swept(url: str) -> None:
    """200 keys refill once and are never seen again; a key in the window before now and
    one in the current window keep theirs (the durable fallback of the rate limit)."""
    clock = FixedClock(TODAY)
    mem = Memory(url, embedder="hashing", clock=clock, background=False)
    now = [TODAY.timestamp() - 100.0]
    try:
        store = _durable(mem)
        gone = SharedRateLimiter(10.0, 10, fallback=store, clock=lambda: now[0])
        for k in range(200):  # a process that then stopped: nobody forgets these
            assert gone.acquire(f"key:{k}") == 0.0
        limiter = SharedRateLimiter(10.0, 10, fallback=store, clock=lambda: now[0])
        now[0] = TODAY.timestamp() - 1.0  # the window before the sweep's
        assert limiter.acquire("key:previous") == 0.0
        now[0] = TODAY.timestamp()
        assert limiter.acquire("key:current") == 0.0
        assert len(_counters(store)) == 202
        report = mem.maintain(Scope("acme", "alice"))
        assert report.counters_swept == 200
        assert sorted(_counters(store).values()) == ["1", "1"]  # the two windows kept
        # the kept windows still count: the key's window takes from its row, not a new one
        for _ in range(9):
            assert limiter.acquire("key:current") == 0.0
        assert limiter.acquire("key:current") > 0.0
    finally:
        mem.close()


def test_the_sweep_is_bounded_per_call_and_resumes_where_it_stopped(url: str) -> None:
    """A call looks at ``limit`` rows at most, the next starts after them; a finished pass
    waits an hour before the next one starts (SQLite, PostgreSQL: ``memory://`` deletes
    from its index, the rows that stopped counting first, ``limit`` at most)."""
    store: Any = open_store(url)
    try:
        for day in range(2):
            when = START + timedelta(days=day)
            takes = [day_take("emb", "acme", f"u{u}", when, 1, None) for u in range(300)]
            assert store.take_counters(takes) is None
        now = epoch_us(TODAY)
        swept = [store.sweep_counters(now, 250) for _ in range(3)]
        assert swept == [250, 250, 100]  # 600 rows, 250 looked at per call
        assert _counters(store) == {}
        assert store.take_counters([day_take("emb", "acme", "bob", START, 1, None)]) is None
        if url == "memory://":  # its index holds what is stale, earliest first: no passes
            assert store.sweep_counters(now + 1, 250) == 1
        else:
            assert store.sweep_counters(now + 1, 250) == 0  # the pass ended under an hour ago
            assert store.sweep_counters(now + SWEEP_EVERY_US, 250) == 1
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_sweep_at_midnight_never_loses_a_count(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Session 29's race across midnight (one process still before it, two after, all
    taking one user's counter), with a sweeper deleting past periods as of just after
    midnight all along: yesterday's and today's counts stay exact."""
    url = f"sqlite:///{tmp_path / 'm.db'}"
    if kind == "postgresql":
        url = request.getfixturevalue("pg_url")
    open_store(url).close()
    go, n = tmp_path / "go", 200
    before = START.replace(hour=23, minute=59, second=59, microsecond=900_000)
    after = before + timedelta(seconds=0.2)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    first = tmp_path / "first"
    runs = [(before, first, None), (after, None, first), (before, None, None)]
    procs = [
        subprocess.Popen(
            [sys.executable, str(BOUNDARY), url, when.isoformat(), str(n), str(go)]
            + [str(p) if p else "-" for p in (mark, wait)],
            env=env,
        )
        for when, mark, wait in runs
    ]
    done = threading.Event()
    sweeps = [0]

    def sweeper() -> None:
        s: Any = open_store(url)
        try:
            while not done.is_set():
                s.sweep_counters(epoch_us(after), 50)
                s.forget_counters([SWEEP_KEY])  # never wait an hour between passes
                sweeps[0] += 1
        finally:
            s.close()

    thread = threading.Thread(target=sweeper)
    thread.start()
    go.touch()
    try:
        assert [p.wait(timeout=300) for p in procs] == [0, 0, 0]
    finally:
        done.set()
        thread.join()
    assert sweeps[0] > 0
    store: Any = open_store(url)
    try:
        k0, k1 = (day_key("emb", "acme", "alice", d) for d in (before, after))
        assert store.counter_values([k0, k1]) == {k0: 2 * n, k1: n}
    finally:
        store.close()


def test_a_memory_store_loaded_from_a_dump_sweeps_the_rows_it_loaded(tmp_path: Path) -> None:
    """``memstrata migrate`` into ``memory://`` writes ``meta`` row by row: those rows were
    in no index of counters, so neither a take of their family nor anything else ever
    deleted them (failed before: a returning user's loaded days all stayed, and the
    sweep found nothing)."""
    src: Any = open_store(f"sqlite:///{tmp_path / 'src.db'}")
    try:
        for day in range(2):  # alice and 100 others, days 0 and 1
            when = START + timedelta(days=day)
            for u in ["alice", *(f"u{i}" for i in range(100))]:
                assert src.take_counters([day_take("emb", "acme", u, when, 1, None)]) is None
    finally:
        src.close()
    target: Any = open_store("memory://")
    try:
        copy_store(f"sqlite:///{tmp_path / 'src.db'}", target)
        assert len(_counters(target)) == 202
        # alice comes back: her first take of a new day deletes her loaded past days
        assert target.take_counters([day_take("emb", "acme", "alice", TODAY, 1, None)]) is None
        family = day_key("emb", "acme", "alice", TODAY)[: -len("2026-03-11")]
        alice = [k for k in _counters(target) if k.startswith(family)]
        assert alice == [day_key("emb", "acme", "alice", TODAY)]
        # the others never do: the sweep deletes theirs
        assert target.sweep_counters(epoch_us(TODAY)) == 200
        assert _counters(target) == {day_key("emb", "acme", "alice", TODAY): "1"}
    finally:
        target.close()
