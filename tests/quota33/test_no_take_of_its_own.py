"""A write counted with no limit takes no counter transaction of its own (quota33).

Before, each write of a process without quotas on a store whose quotas are in use (and
of a process whose quotas limit records only) called the store's ``take_counters``: a
``BEGIN IMMEDIATE`` (SQLite) or a ``BEGIN``/``COMMIT`` (PostgreSQL) of its own before the
write. Now the write's transaction adds the counts, so the store's counter calls are
never made, for ``Memory`` and ``AsyncMemory`` (whose SQLite store runs on threads)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from memstrata import AsyncMemory, FixedClock
from memstrata.quotas import Quota, Quotas
from memstrata.records import Message, Role

from .conftest import ALICE, NOW, plain, served, used

TURNS = [Message(Role.USER, "book a table for two"), Message(Role.USER, "at 8")]


def _watch(store: Any, calls: list[str]) -> None:
    """Record every call of the store's own counter transactions (the real methods run)."""
    for name in ("take_counters", "add_counters"):
        real = getattr(store, name)
        if asyncio.iscoroutinefunction(real):

            async def watched(*a: Any, _real: Any = real, _n: str = name, **k: Any) -> Any:
                calls.append(_n)
                return await _real(*a, **k)

        else:

            def watched(*a: Any, _real: Any = real, _n: str = name, **k: Any) -> Any:  # type: ignore[misc]
                calls.append(_n)
                return _real(*a, **k)

        setattr(store, name, watched)


@pytest.mark.parametrize("quota", [None, Quota(max_records=50)], ids=["plain", "records"])
def test_sync_writes_take_no_counters(shared_url: str, quota: Quota | None) -> None:
    flag = served(shared_url)
    mem = plain(shared_url) if quota is None else served(shared_url, quota)
    calls: list[str] = []
    try:
        mem.add(ALICE, "warm up: the flag is read")
        _watch(mem.store, calls)
        mem.add(ALICE, "a note")
        mem.add_messages(ALICE, TURNS)
        assert calls == []
        assert used(flag) == 4
    finally:
        mem.close()
        flag.close()


@pytest.mark.parametrize("quota", [None, Quota(max_records=50)], ids=["plain", "records"])
def test_async_writes_take_no_counters(shared_url: str, quota: Quota | None) -> None:
    flag = served(shared_url)
    calls: list[str] = []

    async def main() -> None:
        quotas = None if quota is None else Quotas(per_user=quota)
        mem = AsyncMemory(
            shared_url, embedder="hashing", clock=FixedClock(NOW), background=False, quotas=quotas
        )
        try:
            await mem.add(ALICE, "warm up: the flag is read")
            store: Any = mem.store
            _watch(getattr(store, "sync", store), calls)
            await mem.add(ALICE, "a note")
            await mem.add_messages(ALICE, TURNS)
        finally:
            await mem.close()

    try:
        asyncio.run(main())
        assert calls == []
        assert used(flag) == 4
    finally:
        flag.close()


def test_a_daily_limit_still_takes_before_the_embedding(shared_url: str) -> None:
    """Guard: with ``embeddings_per_day`` the take (its check) stays before the embedding."""
    mem = served(shared_url)
    calls: list[str] = []
    try:
        mem.add(ALICE, "warm up")
        _watch(mem.store, calls)
        mem.add(ALICE, "a note")
        assert calls == ["take_counters"]
    finally:
        mem.close()
