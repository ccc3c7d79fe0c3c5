"""``Memory.purge``'s own event of a whole-user purge names its actor unless the actor *is*
the purged user's id: the same exact test purge28 made for other events
(``tests/purge28/test_actor_redacted.py``). Until session 29 an actor that merely contained
the id (``joanna`` purging ``ann``, ``system:maintenance`` purging ``maintenance``) was
recorded as ``[purged]``, and who made the purge was lost. Every store, sync and async."""

from __future__ import annotations

import asyncio

import pytest

from memstrata import AsyncMemory, Memory, Scope
from memstrata.audit import PURGED

ANN = Scope("acme", "ann")


def _purge_events(events: list) -> list[str]:
    return [e.actor for e in events if e.action == "purge"]


# since session 30 an actor holding the id as a word (``system:ann-cleanup``) names the user
# and is dropped (``audit_types.names_user``, tests/purge30)
@pytest.mark.parametrize("actor", ["joanna", "hannah", "Ann"])
def test_an_actor_containing_the_id_is_kept(mem: Memory, actor: str) -> None:
    mem.add(ANN, "ann's note")
    assert mem.purge(ANN, actor=actor).remaining == 0
    assert _purge_events(mem.audit.query("acme")) == [actor]


def test_the_user_purging_themselves_is_not_named(mem: Memory) -> None:
    mem.add(ANN, "ann's note")
    assert mem.purge(ANN, actor="ann").remaining == 0
    events = mem.audit.query("acme")
    assert _purge_events(events) == [PURGED]
    assert not [e for e in events if e.actor == "ann" or e.user == "ann"]


def test_a_purge_by_ids_keeps_its_actor(mem: Memory) -> None:
    rec = mem.add(ANN, "ann's note")
    mem.purge(ANN, [rec.id], actor="ann")
    assert _purge_events(mem.audit.query("acme")) == ["ann"]  # ann is not purged


def test_async() -> None:
    async def main() -> None:
        async with AsyncMemory("memory://", embedder="hashing", background=False) as mem:
            await mem.add(ANN, "ann's note")
            await mem.purge(ANN, actor="joanna")
            assert _purge_events(await mem.audit.query("acme")) == ["joanna"]

    asyncio.run(main())
