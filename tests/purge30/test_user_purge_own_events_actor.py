"""A whole-user purge redacts the purged user's own events: they keep what, when and why
and lose which user and which ids; their actor becomes ``[purged]`` only when it *is* the
user's id (``audit_types.without_actor``'s exact rule, which purge28 gave other users'
events and purge29 the purge's own event). Until session 30 the user's own events lost an
actor that merely contained the id — ``joanna`` deleting ``ann``'s note, ``system:maintenance``
forgetting one of user ``maintenance``'s — on every audit backend (SQLite ``instr``,
PostgreSQL ``strpos``, memory:// ``in``), and who made the change was lost."""

from __future__ import annotations

import asyncio

from memstrata import AsyncMemory, Memory, Scope
from memstrata.audit import PURGED

ANN = Scope("acme", "ann")


def _actors(events: list, action: str) -> list[str]:
    return [e.actor for e in events if e.action == action]


def test_the_users_own_events_keep_an_actor_that_only_contains_the_id(mem: Memory) -> None:
    a = mem.add(ANN, "ann's first note")
    b = mem.add(ANN, "ann's second note")
    c = mem.add(ANN, "ann's third note")
    mem.delete(ANN, a.id, actor="joanna")  # an admin whose name contains "ann"
    mem.delete(ANN, b.id, actor="ann")  # the user herself
    mem.delete(ANN, c.id, actor="system:ann-cleanup")
    mem.purge(ANN, actor="library")
    events = mem.audit.query("acme")
    deletes = [e for e in events if e.action == "delete"]
    assert sorted(_actors(events, "delete")) == sorted(["joanna", PURGED, "system:ann-cleanup"])
    for e in deletes:  # the rest of the redaction is unchanged
        assert e.user is None and e.record_ids == () and e.reason == PURGED and e.details == {}


def test_async_memory() -> None:
    async def main() -> None:
        async with AsyncMemory("memory://", embedder="hashing", background=False) as mem:
            a = await mem.add(ANN, "ann's note")
            await mem.delete(ANN, a.id, actor="joanna")
            await mem.purge(ANN)
            assert _actors(await mem.audit.query("acme"), "delete") == ["joanna"]

    asyncio.run(main())
