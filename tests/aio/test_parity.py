"""The same scripted conversation through Memory and AsyncMemory gives the same results.

Record ids come from a counter (``deterministic_ids``) and time from a fixed clock, so the
two runs can be compared whole: every record (ids, versions, times, counters), every search
hit and score, every context message and item, the export and the stats.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from script import START, conversation

from memstrata import AsyncMemory, FixedClock, Memory


def _resolve(target: Any, name: str) -> Any:
    for part in name.split("."):
        target = getattr(target, part)
    return target


def run_sync(url: str) -> list[Any]:
    clock = FixedClock(START)
    mem = Memory(url, embedder="hashing", clock=clock, background=False)

    async def call(name: str, *args: Any, **kwargs: Any) -> Any:
        return _resolve(mem, name)(*args, **kwargs)

    try:
        return asyncio.run(conversation(call, clock))
    finally:
        mem.close()


def run_async(url: str) -> list[Any]:
    clock = FixedClock(START)

    async def main() -> list[Any]:
        async with AsyncMemory(url, embedder="hashing", clock=clock, background=False) as mem:

            async def call(name: str, *args: Any, **kwargs: Any) -> Any:
                return await _resolve(mem, name)(*args, **kwargs)

            return await conversation(call, clock)

    return asyncio.run(main())


def test_one_conversation_gives_the_same_records_hits_and_contexts(
    url_pair: tuple[str, str], deterministic_ids: Callable[[], None]
) -> None:
    sync_url, async_url = url_pair
    deterministic_ids()
    expected = run_sync(sync_url)
    deterministic_ids()
    got = run_async(async_url)
    assert len(got) == len(expected)
    for step, (a, b) in enumerate(zip(got, expected, strict=True)):
        assert a == b, f"step {step} differs"
    # the script did real work: sessions summarised, facts extracted, searches found things
    records = expected[-6]
    types = {r.type.value for r in records}
    assert {"message", "summary", "fact", "key", "note"} <= types, types
    context = expected[-7]
    assert "peanuts" in context.text and context.items
    assert all(isinstance(hits, list) and hits for hits in expected[-9:-7])
