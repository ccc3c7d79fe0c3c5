"""A slow provider blocks the memory's thread, never the event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from conftest import SlowEmbedder
from memstrata import AsyncMemory, Memory, Scope

ALICE = Scope("acme", "alice", session="s1")
DELAY = 0.4  # each embedding call; a 10 ms ticker should tick ~40 times meanwhile


async def _ticks_during(call: Callable[[], Awaitable[Any]]) -> int:
    """How many times a 10 ms ticker ran while ``call`` was awaited."""
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.03)  # the ticker is running
    before = ticks
    await call()
    during = ticks - before
    task.cancel()
    return during


def test_other_coroutines_progress_while_add_and_search_wait_for_a_slow_embedder() -> None:
    slow = SlowEmbedder(DELAY)

    async def main() -> tuple[int, int, int]:
        async with AsyncMemory("memory://", embedder=slow, background=False) as mem:
            add = await _ticks_during(lambda: mem.add(ALICE, "Alice lives in Lisbon"))
            search = await _ticks_during(lambda: mem.search(ALICE, "which city?", 3))
            context = await _ticks_during(lambda: mem.build_context(ALICE, "her town?", 500))
            return add, search, context

    add, search, context = asyncio.run(main())
    assert slow.calls >= 3  # every call really waited for the embedder
    assert add >= 5 and search >= 5 and context >= 5, (add, search, context)


def test_control_the_sync_memory_called_from_a_coroutine_does_block_the_loop() -> None:
    """The measurement can fail: the same calls on Memory give the ticker no turn at all."""
    slow = SlowEmbedder(DELAY)
    mem = Memory("memory://", embedder=slow, background=False)

    async def call(fn: Callable[[], Any]) -> Any:
        return fn()

    async def main() -> tuple[int, int]:
        add = await _ticks_during(lambda: call(lambda: mem.add(ALICE, "Alice lives in Lisbon")))
        search = await _ticks_during(lambda: call(lambda: mem.search(ALICE, "which city?", 3)))
        return add, search

    try:
        assert asyncio.run(main()) == (0, 0)
    finally:
        mem.close()
