"""Many coroutines on one AsyncMemory end in the state the same calls make one by one."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memstrata import AsyncMemory, FixedClock, Scope

USERS = 6
TURNS = 5


async def _work(mem: AsyncMemory, user: int, order: list[tuple[int, int]]) -> None:
    scope = Scope("acme", f"u{user}", session="s1")
    for i in range(TURNS):
        await mem.add_message(scope, "user", f"user {user} turn {i}: I like topic {i % 3}")
        order.append((user, i))
        await mem.search(scope.user_scope, f"topic {i}", 3)
    await mem.add(scope, f"user {user} has a cat named Cat{user}", type="fact")
    await mem.key.set(scope, f"user {user} wants short answers", 1)
    await mem.end_session(scope)


async def _state(mem: AsyncMemory) -> dict[int, Any]:
    await mem.flush()
    state: dict[int, Any] = {}
    for user in range(USERS):
        scope = Scope("acme", f"u{user}")
        records = await mem.list(scope, filters={"include_superseded": True}, limit=1000)
        # every record is a hit (no cut between two equal scores, which ids would decide)
        hits = await mem.search(scope, "which pet does the user have?", 100)
        state[user] = (
            sorted((r.type.value, r.text, r.session, r.version) for r in records),
            # equal scores come in id order, and ids are random: order ties by text
            sorted((-round(h.score, 9), h.record.text) for h in hits),
        )
    return state


def _run(url: str, *, concurrent: bool) -> tuple[dict[int, Any], list[tuple[int, int]]]:
    async def main() -> tuple[dict[int, Any], list[tuple[int, int]]]:
        clock = FixedClock(datetime(2026, 4, 1, tzinfo=UTC))
        order: list[tuple[int, int]] = []
        async with AsyncMemory(url, embedder="hashing", clock=clock) as mem:  # + worker thread
            if concurrent:
                await asyncio.gather(*(_work(mem, u, order) for u in range(USERS)))
            else:
                for u in range(USERS):
                    await _work(mem, u, order)
            return await _state(mem), order

    return asyncio.run(main())


def test_concurrent_adds_and_searches_end_like_sequential_ones(tmp_path: Path) -> None:
    concurrent, order = _run(f"sqlite:///{tmp_path / 'c.db'}", concurrent=True)
    sequential, seq_order = _run(f"sqlite:///{tmp_path / 's.db'}", concurrent=False)
    assert order != sorted(order) and sorted(order) == seq_order  # really interleaved
    assert concurrent == sequential
    for records, hits in concurrent.values():
        assert sum(1 for r in records if r[0] == "message") == TURNS
        assert hits  # the pet fact is found
