"""A whole-user purge redacts the purged user's own events: they keep what, when and why
and lose which user and which ids, and their actor becomes ``[purged]`` only when it names
the user: their id as a word, not run into a letter, a digit or ``_``
(``audit_types.names_user``: ``ann``, ``user:ann``, ``ann-bot`` and ``ann.lee`` name
``ann``; ``joanna`` and ``anna`` do not). Until session 30 an actor that merely
contained the id was lost too — ``joanna`` deleting one of ``ann``'s records, on every
audit backend (SQLite ``instr``, PostgreSQL ``strpos``, memory:// ``in``) — and who made
the change with it. The purge's own event goes by the same rule (it kept ``user:ann``
purging ``ann``: exactly the id counted there, so a byte scan found her id in it).
Other users' events keep purge28's exact rule (``tests/purge28``)."""

from __future__ import annotations

import asyncio

import pytest

from memstrata import AsyncMemory, Memory, Scope
from memstrata.audit import PURGED
from memstrata.audit_types import names_user

ANN = Scope("acme", "ann")
KEPT = ["joanna", "Ann", "anna", "ann_2", "hannah"]
NAMING = [
    "ann",
    "user:ann",
    "ann (admin)",
    "joanna for ann",
    "system:ann-cleanup",
    "ann.lee@example.com",
]


def _actors(events: list, action: str) -> list[str]:
    return [e.actor for e in events if e.action == action]


def test_the_users_own_events_keep_an_actor_that_does_not_name_them(mem: Memory) -> None:
    for actor in KEPT + NAMING:
        rec = mem.add(ANN, f"ann's note for {actor}")
        mem.delete(ANN, rec.id, actor=actor)
    mem.purge(ANN, actor="library")
    events = mem.audit.query("acme")
    assert _actors(events, "delete") == KEPT + [PURGED] * len(NAMING)
    for e in events:  # the rest of the redaction is unchanged
        if e.action == "delete":
            assert e.user is None and e.record_ids == () and e.reason == PURGED
            assert e.details == {}


@pytest.mark.parametrize("actor", ["user:ann", "ann (admin)"])
def test_the_purges_own_event_drops_an_actor_naming_the_user(mem: Memory, actor: str) -> None:
    mem.add(ANN, "ann's note")
    mem.purge(ANN, actor=actor)
    assert _actors(mem.audit.query("acme"), "purge") == [PURGED]


def test_names_user() -> None:
    assert [a for a in KEPT + NAMING if names_user(a, "ann")] == NAMING
    assert names_user("carol.smith@example.com", "carol.smith@example.com")
    assert names_user("carol.smith@example.com-assistant", "carol.smith@example.com")
    assert not names_user("carol.smith@example.comx", "carol.smith@example.com")
    assert names_user("user:victim-user-7731", "victim-user-7731")
    assert not names_user("victim-user-77310", "victim-user-7731")
    assert not names_user("anything", "")


def test_async_memory() -> None:
    async def main() -> None:
        async with AsyncMemory("memory://", embedder="hashing", background=False) as mem:
            a = await mem.add(ANN, "ann's note")
            b = await mem.add(ANN, "ann's other note")
            await mem.delete(ANN, a.id, actor="joanna")
            await mem.delete(ANN, b.id, actor="user:ann")
            await mem.purge(ANN)
            assert _actors(await mem.audit.query("acme"), "delete") == ["joanna", PURGED]

    asyncio.run(main())
