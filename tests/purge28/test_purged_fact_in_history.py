"""Purging a fact by id left its id in the earlier versions of the facts it had
superseded (``superseded_by``): the current version was re-linked (purge27), the archived
ones still named the purged record. Now every version of those facts says the value that
superseded them was purged (``[purged]``), and the re-linking works as before: the best
earlier value current again, or superseded by the key's current value. Every store."""

from __future__ import annotations

import asyncio
from typing import Any

from memstrata import AsyncMemory, Memory, Scope
from memstrata.audit import PURGED

BOB = Scope("acme", "bob")


def _fact(value: str, confidence: float = 0.8) -> dict[str, Any]:
    return {
        "category": "preference",
        "key": "favorite_color",
        "value": value,
        "confidence": confidence,
        "evidence": f"I like {value}",
    }


def _named(versions: list[Any], rid: str) -> list[int]:
    return [v.version for v in versions if v.superseded_by == rid]


def test_the_current_value_purged(mem: Memory) -> None:
    blue = mem.facts.upsert(BOB, _fact("blue")).record
    green = mem.facts.upsert(BOB, _fact("green", 0.9)).record
    assert _named(mem.history(BOB, blue.id), green.id)  # an archived version names it
    mem.purge(BOB, [green.id])
    hist = mem.history(BOB, blue.id)
    assert _named(hist, green.id) == []
    assert _named(hist, PURGED)  # what it was: superseded, by a value since purged
    current = mem.facts.get(BOB, "favorite_color")
    assert current is not None and current.id == blue.id
    assert (current.superseded_by, current.valid_to) == (None, None)
    assert [v.content.raw for v in hist][0] == blue.content.raw  # its own values kept


def test_a_value_between_two_purged(mem: Memory) -> None:
    a = mem.facts.upsert(BOB, _fact("blue")).record
    b = mem.facts.upsert(BOB, _fact("green", 0.85)).record
    c = mem.facts.upsert(BOB, _fact("red", 0.9)).record
    mem.purge(BOB, [b.id])
    assert _named(mem.history(BOB, a.id), b.id) == []
    assert _named(mem.history(BOB, c.id), b.id) == []
    assert mem.get(BOB, a.id).superseded_by == c.id
    current = mem.facts.get(BOB, "favorite_color")
    assert current is not None and current.id == c.id


def test_async() -> None:
    async def main() -> None:
        async with AsyncMemory("memory://", embedder="hashing", background=False) as mem:
            blue = (await mem.facts.upsert(BOB, _fact("blue"))).record
            green = (await mem.facts.upsert(BOB, _fact("green", 0.9))).record
            await mem.purge(BOB, [green.id])
            assert _named(await mem.history(BOB, blue.id), green.id) == []

    asyncio.run(main())
