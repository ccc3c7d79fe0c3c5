"""``vector_cache_rows``, the bound of a store's in-process vector cache (SQLite and
PostgreSQL), settable from ``Memory``/``AsyncMemory`` and the server config (session 30).
Before, only ``SQLiteStore(..., vector_cache_rows=)`` and ``AsyncPostgresStore(url,
vector_cache_rows=)`` took it: a user of ``Memory`` or a server operator had 500,000 rows
(~0.75 GB at 384 dimensions, ~3 GB at 1,536) whatever their machine."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from memstrata import AsyncMemory, FixedClock, Memory, Scope
from memstrata.errors import ValidationError
from memstrata.store.sqlite import SQLiteStore
from memstrata.store.url import open_store
from memstrata.store.vector_bound import VECTOR_CACHE_ROWS

WORDS = (
    "lisbon harbour violin tram coffee garden rain mountain river sailing bread chess "
    "winter kettle lantern market museum orange piano quartz rocket saddle tiger umbrella "
    "valley walnut yacht zebra anchor basket candle desert engine forest glacier"
).split()

BAD = [0, -1, True, False, 1.5, "1000", None.__class__]


def _vectors(store: Any) -> Any:
    """The vector cache of the store a memory opened (the sync store behind an async
    SQLite one's threads)."""
    return getattr(store, "sync", store)._vectors


def test_the_default_is_the_stores_default(url: str, clock: FixedClock) -> None:
    mem = Memory(url, embedder="hashing", clock=clock, background=False)
    try:
        assert _vectors(mem._store).max_rows == VECTOR_CACHE_ROWS == 500_000
    finally:
        mem.close()


def test_memory_passes_the_bound_to_its_store(url: str, clock: FixedClock) -> None:
    """(Failed before: Memory took no vector_cache_rows, TypeError.)"""
    mem = Memory(url, embedder="hashing", clock=clock, background=False, vector_cache_rows=1234)
    try:
        assert _vectors(mem._store).max_rows == 1234
    finally:
        mem.close()


def test_async_memory_passes_the_bound_to_its_store(url: str, clock: FixedClock) -> None:
    async def run() -> int:
        async with AsyncMemory(
            url, embedder="hashing", clock=clock, background=False, vector_cache_rows=77
        ) as mem:
            return int(_vectors(mem._store).max_rows)

    assert asyncio.run(run()) == 77


def test_open_store_passes_the_bound(url: str) -> None:
    store = open_store(url, vector_cache_rows=5)
    try:
        assert _vectors(store).max_rows == 5
    finally:
        store.close()


def test_memory_url_takes_and_ignores_it(clock: FixedClock) -> None:
    """memory:// holds every record in the process (no cache to bound): the value is
    checked, then unused."""
    Memory("memory://", embedder="hashing", clock=clock, vector_cache_rows=10).close()
    with pytest.raises(ValidationError, match="vector_cache_rows"):
        Memory("memory://", embedder="hashing", clock=clock, vector_cache_rows=0)


@pytest.mark.parametrize("bad", BAD, ids=repr)
def test_a_bad_bound_is_refused_before_anything_opens(
    bad: object, tmp_path: Path, clock: FixedClock
) -> None:
    if bad is None.__class__:
        bad = 10**5000 * -1  # a number too long to print
    db = tmp_path / "m.db"
    for make in (
        lambda: Memory(
            f"sqlite:///{db}",
            embedder="hashing",
            clock=clock,
            vector_cache_rows=bad,  # type: ignore[arg-type]
        ),
        lambda: open_store(f"sqlite:///{db}", vector_cache_rows=bad),  # type: ignore[arg-type]
        lambda: SQLiteStore(str(db), vector_cache_rows=bad),  # type: ignore[arg-type]
    ):
        with pytest.raises(ValidationError, match="vector_cache_rows") as caught:
            make()
        assert "at least 1" in str(caught.value) or "integer" in str(caught.value)
        assert not db.exists()

    async def run() -> None:
        mem = AsyncMemory(f"sqlite:///{db}", embedder="hashing", vector_cache_rows=bad)  # type: ignore[arg-type]
        await mem.open()

    with pytest.raises(ValidationError, match="vector_cache_rows"):
        asyncio.run(run())
    assert not db.exists()


def test_a_bad_bound_on_postgresql_is_refused(pg_url: str) -> None:
    from memstrata.store.postgres import PostgresStore

    with pytest.raises(ValidationError, match="vector_cache_rows"):
        PostgresStore(pg_url, vector_cache_rows=0)
    with pytest.raises(ValidationError, match="vector_cache_rows"):
        Memory(pg_url, embedder="hashing", vector_cache_rows=True)


def test_the_bound_with_a_store_given_is_refused(tmp_path: Path, clock: FixedClock) -> None:
    """Memory(store=...) does not open its store: a bound given beside it would be dropped
    silently, so it is refused (set it on the store)."""
    store = SQLiteStore(str(tmp_path / "m.db"))
    try:
        with pytest.raises(ValidationError, match="set it on that store"):
            Memory(store=store, embedder="hashing", clock=clock, vector_cache_rows=10)
    finally:
        store.close()


def _fill(mem: Memory, users: list[Scope], per_user: int) -> None:
    rng = random.Random(30)
    for scope in users:
        for _ in range(per_user):
            mem.add(scope, " ".join(rng.sample(WORDS, 5)), dedup=False)


def _searches(mem: Memory, users: list[Scope]) -> list[list[tuple[str, float]]]:
    """Each user's searches in turn, three rounds, dense and hybrid: every hit's id and
    score."""
    got = []
    for _ in range(3):
        for scope in users:
            for query in ("harbour violin tram", "winter kettle", "zebra anchor basket rain"):
                for mode in ("dense", "hybrid"):
                    hits = mem.search(scope, query, top_k=8, mode=mode)
                    got.append([(h.record.id, round(h.score, 6)) for h in hits])
    return got


@pytest.mark.parametrize("bound", [1, 150])
def test_a_small_bound_gives_the_same_hits(bound: int, url: str, clock: FixedClock) -> None:
    """Six users of 60 records searched in turn: with a bound of 1 row (each user held
    alone, dropped by the next user's search) or 150 (two users' rows at most: 64 at least
    each) every search returns what it returns with the default bound, and the small cache
    really dropped users (it read their rows again)."""
    users = [Scope("acme", f"u{i}", session="s") for i in range(6)]
    mem = Memory(url, embedder="hashing", clock=clock, background=False)
    try:
        _fill(mem, users, 60)
        expected = _searches(mem, users)
        assert len(_vectors(mem._store)) == len(users)  # the default holds every user
    finally:
        mem.close()
    small = Memory(url, embedder="hashing", clock=clock, background=False, vector_cache_rows=bound)
    try:
        assert _searches(small, users) == expected
        cache = _vectors(small._store)
        assert len(cache) <= (1 if bound == 1 else 2)
        held = getattr(cache, "rows_held", None)
        assert (cache._rows if held is None else held) <= max(bound, 128)  # one user: alone
        if hasattr(cache, "rows_loaded"):  # SQLite counts the rows it read
            assert cache.rows_loaded >= 3 * len(users) * 60  # each round read every user again
    finally:
        small.close()
