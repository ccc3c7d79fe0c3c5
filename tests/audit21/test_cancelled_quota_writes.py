"""A write cancelled while it takes its records-quota lease gives the lease back. The
store takes the lease whatever the caller does (SQLite on a thread of its own, PostgreSQL
on the server); before audit21 a cancelled ``add`` could leave it held for nobody, and the
next write waited the full ``WAIT_SECONDS`` (30 s) for it, then failed with "another writer
has held this records quota lease"."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from memstrata import AsyncMemory, Scope
from memstrata._async.quotas import counters_of
from memstrata.quotas import Quota, Quotas, day_key

ALICE = Scope("acme", "alice", session="s1")


def test_a_cancelled_write_leaves_no_lease_behind(url: str) -> None:
    async def main() -> list[int]:
        quotas = Quotas(per_user=Quota(max_records=10_000, embeddings_per_day=10_000))
        hung = []
        async with AsyncMemory(url, embedder="hashing", background=False, quotas=quotas) as mem:
            await mem.add(ALICE, "a first note, so the store is warm")
            for i in range(30):
                with contextlib.suppress(TimeoutError):  # cancelled at a spread of points
                    await asyncio.wait_for(
                        mem.add(ALICE, f"note {i} on the subject {i * 7}", dedup=False),
                        timeout=0.0002 * (i % 15 + 1),
                    )
                try:
                    await asyncio.wait_for(mem.add(ALICE, f"check {i}", dedup=False), timeout=5)
                except TimeoutError:
                    hung.append(i)
                    break
        return hung

    assert asyncio.run(main()) == []


def test_a_cancelled_write_stays_counted_in_the_days_embeddings(tmp_path: Path) -> None:
    """A write cancelled after its take may have embedded and landed (the store's thread
    goes on): it stays counted. Before audit21 the take was given back, so a client that
    cancels its calls got embeddings (and records) the day's quota never saw."""
    url = f"sqlite:///{tmp_path / 'm.db'}"

    async def main() -> tuple[int, int]:
        quotas = Quotas(per_user=Quota(embeddings_per_day=10_000))
        async with AsyncMemory(url, embedder="hashing", background=False, quotas=quotas) as mem:
            for i in range(150):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        mem.add(ALICE, f"note {i} on the subject {i * 7}", dedup=False),
                        timeout=0.0002 * (i % 15 + 1),
                    )
            await asyncio.sleep(0.2)  # a write still on the store's thread lands
            records = len(await mem.list(ALICE, limit=1000))
            key = day_key("emb", ALICE.tenant, ALICE.user, mem.clock.now())
            counted = (await counters_of(mem.store).counter_values([key]))[key]
        return records, counted

    records, counted = asyncio.run(main())
    assert records > 0
    assert counted >= records
