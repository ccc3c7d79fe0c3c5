"""Natively async: calls on one AsyncMemory overlap while an async provider waits.

The thread façade this replaced ran one call at a time; here an async embedder's or LLM's
wait frees the loop for every other coroutine, including other calls on the same memory.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from memstrata import AsyncMemory, Scope
from memstrata.embedder.base import Matrix
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.llm.heuristic import HeuristicLLM

ALICE = Scope("acme", "alice", session="s1")
DELAY = 0.3


class AsyncSlowEmbedder:
    """An async embedder whose every call waits ``DELAY`` (a remote endpoint's latency)."""

    def __init__(self) -> None:
        self._inner = HashingEmbedder()
        self.calls = 0

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dims(self) -> int:
        return self._inner.dims

    async def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        self.calls += 1
        await asyncio.sleep(DELAY)
        return self._inner.embed_batch(texts, query=query)


class AsyncSlowLLM:
    """The heuristic LLM's answers, each after ``DELAY``."""

    def __init__(self) -> None:
        self._inner = HeuristicLLM()
        self.calls = 0

    @property
    def name(self) -> str:
        return "slow-heuristic"

    async def _wait(self) -> None:
        self.calls += 1
        await asyncio.sleep(DELAY)

    async def summarize(self, texts: Sequence[str], *, max_words: int = 200) -> str:
        await self._wait()
        return self._inner.summarize(texts, max_words=max_words)

    async def extract_facts(self, texts: Sequence[str]) -> list[object]:
        await self._wait()
        return list(self._inner.extract_facts(texts))

    async def score_importance(self, text: str) -> float:
        await self._wait()
        return self._inner.score_importance(text)

    async def reflect(self, task: object) -> object:
        await self._wait()
        return self._inner.reflect(task)  # type: ignore[arg-type]

    async def merge_profile(
        self, current: dict[str, str], incoming: dict[str, str]
    ) -> dict[str, str]:
        await self._wait()
        return self._inner.merge_profile(current, incoming)

    async def extract_key_info(self, texts: Sequence[str]) -> list[str]:
        await self._wait()
        return self._inner.extract_key_info(texts)


def test_searches_on_one_memory_overlap_while_the_async_embedder_waits() -> None:
    slow = AsyncSlowEmbedder()

    async def main() -> tuple[float, list[int]]:
        async with AsyncMemory("memory://", embedder=slow, background=False) as mem:
            await mem.add(ALICE, "Alice lives in Lisbon")
            await mem.add(ALICE, "Alice plays the cello on Tuesdays")
            questions = ["which city?", "what instrument?", "which day?", "any pets?"]
            start = time.perf_counter()
            hits = await asyncio.gather(*(mem.search(ALICE, q, 3) for q in questions))
            return time.perf_counter() - start, [len(h) for h in hits]

    elapsed, sizes = asyncio.run(main())
    assert all(sizes)  # every search found something
    # The four query embeddings did not wait one after another (the thread façade: 4 delays,
    # 1.2 s): the first went alone, the three that arrived meanwhile were coalesced into one
    # call (embedder/batching.py), so two delays in all.
    assert slow.calls == 2 + 2
    assert elapsed < 3 * DELAY


def test_a_slow_llm_in_end_session_does_not_hold_up_reads_of_the_same_memory() -> None:
    llm = AsyncSlowLLM()

    async def main() -> tuple[float, float, int]:
        async with AsyncMemory("memory://", embedder="hashing", llm=llm, background=False) as mem:
            for i in range(6):
                await mem.add_message(ALICE, "user", f"I'm Alice and I like topic {i}")
            ending = asyncio.create_task(mem.end_session(ALICE))  # summaries through the LLM
            await asyncio.sleep(0.05)
            start = time.perf_counter()
            context = await mem.build_context(ALICE, "what does Alice like?", 500)
            read = time.perf_counter() - start
            await ending
            return read, time.perf_counter() - start, len(context.text)

    read, total, size = asyncio.run(main())
    assert llm.calls >= 1 and size > 0
    assert read < DELAY  # the read did not wait for the LLM's turn
    assert total >= DELAY * 0.5  # while end_session really was waiting on it
