"""Opening, closing, threads, errors at open, and what cancellation does to a write."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from memstrata import (
    AsyncMemory,
    EmbeddingMismatchError,
    Memory,
    Scope,
    StoreError,
    ValidationError,
)

from .helpers import SlowEmbedder, threads

ALICE = Scope("acme", "alice", session="s1")


def test_async_with_opens_and_closes_every_thread_it_started(tmp_path: Path) -> None:
    before = threads()

    async def main() -> tuple[int, list[str]]:
        async with AsyncMemory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing") as mem:
            await mem.add_message(ALICE, "user", "I'm vegetarian")  # wakes the job worker
            started = len(threads() - before)
            await mem.flush()
            texts = [r.text for r in await mem.list(ALICE)]
        assert mem.closed
        return started, texts

    started, texts = asyncio.run(main())
    assert started >= 2  # the memory's own thread and the background job worker
    assert "I'm vegetarian" in texts
    assert threads() == before


def test_a_closed_memory_refuses_calls_and_closing_twice_is_harmless(tmp_path: Path) -> None:
    async def main() -> None:
        mem = AsyncMemory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing")
        rec = await mem.add(ALICE, "Alice likes tea")
        await mem.aclose()
        await mem.aclose()
        await mem.close()
        with pytest.raises(StoreError, match="closed"):
            await mem.get(ALICE, rec.id)
        with pytest.raises(StoreError, match="closed"):
            await mem.key.list(ALICE)
        async with AsyncMemory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing") as again:
            assert (await again.get(ALICE, rec.id)).text == "Alice likes tea"  # it was written

    asyncio.run(main())


def test_errors_of_the_constructor_surface_at_open_and_leave_no_thread(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    Memory(url, embedder="hashing", background=False).close()  # built with hashing-256
    before = threads()

    async def main() -> None:
        with pytest.raises(EmbeddingMismatchError, match="hashing-256"):
            async with AsyncMemory(url, embedder="hashing:512"):
                pass
        with pytest.raises(ValidationError, match="roles"):
            async with AsyncMemory(url, embedder="hashing", roles="admin"):
                pass
        mem = AsyncMemory(url, embedder="hashing:512")  # without async with: first call
        with pytest.raises(EmbeddingMismatchError):
            await mem.search(ALICE, "anything")
        with pytest.raises(EmbeddingMismatchError):
            await mem.open()
        await mem.aclose()

    asyncio.run(main())
    assert threads() == before


def test_a_write_cancelled_while_it_embeds_writes_nothing_and_the_memory_goes_on() -> None:
    """Natively async, a cancelled call stops at the await it was in: cancelled while its
    embedding runs, an add never reaches its transaction (no half write: no record, no
    index entry, no job); the memory keeps working."""
    release = threading.Event()
    slow = SlowEmbedder(0.0, release)

    async def main() -> tuple[list[str], list[str], int]:
        async with AsyncMemory("memory://", embedder=slow, background=False) as mem:
            task = asyncio.create_task(mem.add(ALICE, "Alice adopted a dog named Rex"))
            assert await asyncio.to_thread(slow.started.wait, 10)  # the write is embedding
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            release.set()
            after_cancel = [r.text for r in await mem.list(ALICE)]
            hits = [h.text for h in await mem.search(ALICE, "dog named Rex", 5)]
            await mem.add(ALICE, "Alice plays the cello")
            return after_cancel, hits, len(await mem.list(ALICE))

    after_cancel, hits, count = asyncio.run(main())
    assert after_cancel == [] and hits == []
    assert count == 1


def test_a_cancelled_write_still_waiting_for_the_thread_never_runs() -> None:
    release = threading.Event()
    slow = SlowEmbedder(0.0, release)

    async def main() -> list[str]:
        async with AsyncMemory("memory://", embedder=slow, background=False) as mem:
            first = asyncio.create_task(mem.add(ALICE, "first: Alice lives in Lisbon"))
            assert await asyncio.to_thread(slow.started.wait, 10)
            second = asyncio.create_task(mem.add(ALICE, "second: Alice plays the cello"))
            await asyncio.sleep(0.05)  # submitted, queued behind the first
            second.cancel()
            release.set()
            await first
            with pytest.raises(asyncio.CancelledError):
                await second
            return [r.text for r in await mem.list(ALICE)]

    assert asyncio.run(main()) == ["first: Alice lives in Lisbon"]
    assert slow.calls == 1  # the second write never reached the embedder
