"""A purge by ids leaves no id of a purged record in what the user's other records say of
it, in any version: a fact's ``structured["replaces"]`` (the value it replaced) and
``structured["carries_out"]`` (the plan it carried out), the ``superseded_by`` of a fact of
another key (a plan carried out, a holder's value), and a re-derived record's
``metadata["refreshed"]["dropped_sources"]`` (written by this purge or by an earlier
maintenance pass). Each says ``[purged]`` instead (``store/purged_reader.py``): what the
record was (it replaced a value, carried out a plan, dropped two sources) stays, not which
record. Until session 29 each kept the purged id. Every store, sync and async."""

from __future__ import annotations

import asyncio
from typing import Any

from memstrata import AsyncMemory, Memory, Scope
from memstrata.audit import PURGED
from memstrata.records import RecordType, Source

BOB = Scope("acme", "bob")
EVERY = {"include_deleted": True, "include_superseded": True}


def _fact(key: str, value: str, confidence: float = 0.8, category: str = "preference") -> Any:
    return {
        "category": category,
        "key": key,
        "value": value,
        "confidence": confidence,
        "evidence": f"I said {value}",
    }


def _traces(mem: Memory, scope: Scope, ids: list[str]) -> list[tuple[str, int, str]]:
    """(record, version, purged id) for every version of every record of the user that
    names a purged id anywhere."""
    out = []
    for r in mem.list(scope, filters=EVERY, limit=10_000):
        for v in mem.history(scope, r.id):
            text = repr(v)
            out.extend((r.id, v.version, i) for i in ids if i in text)
    return out


def test_the_value_a_fact_replaced_purged(mem: Memory) -> None:
    blue = mem.facts.upsert(BOB, _fact("favorite_color", "blue")).record
    green = mem.facts.upsert(BOB, _fact("favorite_color", "green", 0.9)).record
    assert green.content.structured["replaces"] == blue.id
    mem.purge(BOB, [blue.id])
    assert _traces(mem, BOB, [blue.id]) == []
    now = mem.get(BOB, green.id)
    assert now.content.structured["replaces"] == PURGED  # it replaced a value, purged
    assert now.source_ids == ()  # the link it cited as its source goes with the id
    assert len(mem.history(BOB, green.id)) == 2  # its history kept, rewritten
    assert mem.facts.get(BOB, "favorite_color").id == green.id


def test_the_plan_a_fact_carried_out_purged(mem: Memory) -> None:
    plan = mem.facts.upsert(BOB, _fact("moving_to", "Porto", category="plan")).record
    there = mem.facts.upsert(BOB, _fact("location", "Porto", category="location")).record
    assert there.content.structured["carries_out"] == plan.id
    mem.purge(BOB, [plan.id])
    assert _traces(mem, BOB, [plan.id]) == []
    assert mem.get(BOB, there.id).content.structured["carries_out"] == PURGED
    assert mem.facts.get(BOB, "location").id == there.id


def test_the_fact_that_carried_out_a_plan_purged(mem: Memory) -> None:
    plan = mem.facts.upsert(BOB, _fact("moving_to", "Porto", category="plan")).record
    there = mem.facts.upsert(BOB, _fact("location", "Porto", category="location")).record
    assert mem.get(BOB, plan.id).superseded_by == there.id  # another key's fact
    mem.purge(BOB, [there.id])
    assert _traces(mem, BOB, [there.id]) == []
    back = mem.facts.get(BOB, "moving_to")  # the plan is current again, as before
    assert back is not None and back.id == plan.id and back.superseded_by is None
    assert PURGED in [v.superseded_by for v in mem.history(BOB, plan.id)]


def _derived(mem: Memory) -> tuple[list[str], str]:
    turns = [mem.add(BOB, f"turn {n} about the garden", dedup=False).id for n in range(3)]
    note = mem.add(
        BOB,
        "the user gardens",
        type=RecordType.EPISODE,
        source=Source.IMPLICIT_INFERENCE,
        source_ids=turns,
    )
    return turns, note.id


def test_dropped_sources_of_this_purge(mem: Memory) -> None:
    turns, note = _derived(mem)
    mem.purge(BOB, turns[:2])
    refreshed = mem.get(BOB, note).metadata["refreshed"]
    assert refreshed["dropped_sources"] == [PURGED, PURGED]  # how many, not which
    assert refreshed["left"] == 1 and mem.get(BOB, note).source_ids == (turns[2],)
    assert _traces(mem, BOB, turns[:2]) == []


def test_dropped_sources_of_an_earlier_maintenance(mem: Memory) -> None:
    turns, note = _derived(mem)
    mem.forget(BOB, [turns[0]], reason="asked")
    mem.maintain(BOB)
    assert mem.get(BOB, note).metadata["refreshed"]["dropped_sources"] == [turns[0]]
    mem.purge(BOB, [turns[0]])
    assert _traces(mem, BOB, [turns[0]]) == []
    assert mem.get(BOB, note).metadata["refreshed"]["dropped_sources"] == [PURGED]
    assert mem.get(BOB, note).source_ids == tuple(turns[1:])


def test_async() -> None:
    async def main() -> None:
        async with AsyncMemory("memory://", embedder="hashing", background=False) as mem:
            plan = await mem.facts.upsert(BOB, _fact("moving_to", "Porto", category="plan"))
            there = await mem.facts.upsert(BOB, _fact("location", "Porto", category="location"))
            await mem.purge(BOB, [plan.record.id])
            got = await mem.get(BOB, there.record.id)
            assert got.content.structured["carries_out"] == PURGED

    asyncio.run(main())


def test_dropped_sources_of_an_archived_note(mem: Memory) -> None:
    """A note a later refresh replaced names the purged source only in an archived
    version: it says ``[purged]`` there too (the record's current version has a note, so
    its versions are read)."""
    turns, note = _derived(mem)
    mem.forget(BOB, [turns[0]], reason="asked")
    mem.maintain(BOB)
    mem.forget(BOB, [turns[1]], reason="asked")
    mem.maintain(BOB)
    assert mem.get(BOB, note).metadata["refreshed"]["dropped_sources"] == [turns[1]]
    mem.purge(BOB, [turns[0]])
    assert _traces(mem, BOB, [turns[0]]) == []
    assert mem.get(BOB, note).metadata["refreshed"]["dropped_sources"] == [turns[1]]


def test_a_similar_records_relation(mem: Memory) -> None:
    """Dedup links a new record to the similar ones it found (``similar_to``): a purged
    one's id leaves the relation, which says ``[purged]``."""
    a = mem.add(BOB, "I like hiking in the mountains on weekends with my dog")
    b = mem.add(BOB, "I like hiking in the mountains on weekends with my cat")
    assert [r.target_id for r in b.relations] == [a.id]
    mem.purge(BOB, [a.id])
    assert _traces(mem, BOB, [a.id]) == []
    assert [(r.kind, r.target_id) for r in mem.get(BOB, b.id).relations] == [("similar_to", PURGED)]


def test_a_layers_id_field(mem: Memory) -> None:
    """A key entry's ``metadata["cluster_id"]`` (records.ID_FIELDS) naming a purged
    record says ``[purged]``."""
    cluster = mem.add(BOB, "a cluster of notes about gardens", dedup=False)
    key = mem.add(
        BOB, "gardens matter to the user", type=RecordType.KEY, metadata={"cluster_id": cluster.id}
    )
    mem.purge(BOB, [cluster.id])
    assert _traces(mem, BOB, [cluster.id]) == []
    assert mem.get(BOB, key.id).metadata["cluster_id"] == PURGED
