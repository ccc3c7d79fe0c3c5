"""Purging a fact's current value (by id) left the value before it superseded by a record
that no longer exists: the key had no current value, and the earlier one pointed nowhere.
The user asked to forget that value, not the earlier ones: the best of them is current
again (as when a fact goes with its purged turns), and a value between two others leaves
the one before it superseded by the key's current value (rederive._relink)."""

from __future__ import annotations

import asyncio
from typing import Any

from memstrata import AsyncMemory, Memory, Scope
from memstrata.filters import Filters
from memstrata.records import RecordType

BOB = Scope("acme", "bob")


def _fact(value: str, confidence: float = 0.8) -> dict[str, Any]:
    return {
        "category": "preference",
        "key": "favorite_color",
        "value": value,
        "confidence": confidence,
        "evidence": f"I like {value}",
    }


def _all_facts(mem: Memory) -> list[Any]:
    flt = Filters(types=frozenset({RecordType.FACT}), include_superseded=True, include_deleted=True)
    return mem.list(BOB, filters=flt, limit=1000)


def test_purging_the_current_value_brings_the_earlier_one_back(mem: Memory) -> None:
    blue = mem.facts.upsert(BOB, _fact("blue")).record
    green = mem.facts.upsert(BOB, _fact("green", 0.9)).record
    assert mem.get(BOB, blue.id).superseded_by == green.id
    mem.purge(BOB, [green.id])
    current = mem.facts.get(BOB, "favorite_color")
    assert current is not None and current.id == blue.id
    assert (current.superseded_by, current.valid_to) == (None, None)
    assert current.metadata["reinstated"]["reason"] == "the value that replaced it was purged"
    ids = {r.id for r in _all_facts(mem)}
    assert all(r.superseded_by in (None, *ids) for r in _all_facts(mem))


def test_purging_a_value_between_two_leaves_the_first_superseded_by_the_current(
    mem: Memory,
) -> None:
    a = mem.facts.upsert(BOB, _fact("blue")).record
    b = mem.facts.upsert(BOB, _fact("green", 0.85)).record
    c = mem.facts.upsert(BOB, _fact("red", 0.9)).record
    assert mem.get(BOB, b.id).superseded_by == c.id
    mem.purge(BOB, [b.id])
    current = mem.facts.get(BOB, "favorite_color")
    assert current is not None and current.id == c.id
    assert mem.get(BOB, a.id).superseded_by == c.id
    assert mem.get(BOB, a.id).valid_to is not None  # it still ended when it did


def test_async() -> None:
    async def main() -> None:
        mem = AsyncMemory("memory://", embedder="hashing", background=False)
        await mem.open()
        try:
            blue = (await mem.facts.upsert(BOB, _fact("blue"))).record
            green = (await mem.facts.upsert(BOB, _fact("green", 0.9))).record
            await mem.purge(BOB, [green.id])
            current = await mem.facts.get(BOB, "favorite_color")
            assert current is not None and current.id == blue.id
        finally:
            await mem.close()

    asyncio.run(main())
