"""A ``flush`` cancelled while it runs a claim of jobs gives the claim's jobs back at once.
Before audit21 they stayed leased to the cancelled run until the lease ran out, so the next
``flush`` (or ``end_session``, which flushes) waited 15 s for jobs nobody was running."""

from __future__ import annotations

import asyncio
import contextlib
import time

from memstrata import AsyncMemory, Scope

ALICE = Scope("acme", "alice", session="s1")


def test_the_flush_after_a_cancelled_one_does_not_wait_for_its_jobs(url: str) -> None:
    async def main() -> tuple[float, int, int]:
        slowest = 0.0
        async with AsyncMemory(url, embedder="hashing", background=False) as mem:
            for i in range(30):
                await mem.add_messages(
                    ALICE,
                    [
                        {"role": "user", "content": f"I moved to town {i} with my bike {i}"},  # type: ignore[list-item]
                        {"role": "assistant", "content": f"Town {i} suits a bike"},  # type: ignore[list-item]
                    ],
                )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(mem.flush(), timeout=0.0005 * (i % 10 + 1) ** 2)
                start = time.perf_counter()
                await mem.flush()
                slowest = max(slowest, time.perf_counter() - start)
                if slowest > 5:
                    break
            stats = await mem.stats(ALICE)
        return slowest, stats["pending_jobs"], stats["failed_jobs"]

    slowest, pending, failed = asyncio.run(main())
    assert slowest < 5, f"a flush waited {slowest:.1f} s for the jobs of a cancelled one"
    assert (pending, failed) == (0, 0)
