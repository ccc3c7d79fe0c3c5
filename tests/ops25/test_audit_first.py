"""``delete``, ``restore`` and ``set_access`` write their change and its audit event in one
transaction where the audit log is a table of the store (SQLite, PostgreSQL; ``memory://``
appends the event just before), as ``forget`` does since session 24. Before session 25 the
event was appended after the change had committed: a process killed between the two (or an
event the database refused) left a record deleted, restored or shared with no event naming
it.

A real child process (crash23's harness, ``kill -9`` as it is about to insert the event)
leaves neither the change nor the event, and the call run again makes both; an event the
database refuses (a trigger) leaves the record as it was, through the async API (natively
async on PostgreSQL, the thread adapter on SQLite); on every store each call records one
event naming its record."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest

from crash23 import kill
from crash23.child import VICTIM
from durable24.test_forget_atomic import _refuse_audit_inserts
from memstrata import AsyncMemory, Memory
from memstrata.llm.base import ExtractedFact
from memstrata.records import MemoryRecord, RecordStatus

CHILD = Path(__file__).with_name("child.py")
U = VICTIM.user_scope
ACTION = {"delete": "delete", "restore": "restore", "set-access": "set_access"}


def _open(url: str) -> Memory:
    return Memory(url, embedder="hashing", background=False, roles=["staff"])


def _state(rec: MemoryRecord) -> tuple[object, ...]:
    return (rec.status, rec.version, rec.access.allowed_roles)


def _events(mem: Memory, action: str, record_id: str) -> list[str]:
    return [e.actor for e in mem.audit.query("acme", action=action, record_id=record_id)]


@pytest.mark.parametrize("op", ["delete", "restore", "set-access"])
def test_a_call_killed_at_its_event_leaves_neither_change_nor_event(url: str, op: str) -> None:
    with _open(url) as mem:
        rec = mem.add_messages(VICTIM, [{"role": "user", "content": "a heron by the lake"}])[0]
        if op == "restore":
            mem.delete(VICTIM, rec.id)
        before = _state(mem.get(VICTIM, rec.id, include_deleted=True))
    assert kill.run(url, "insert into audit_log@1", op, rec.id, script=CHILD) == -signal.SIGKILL
    with _open(url) as mem:
        # before session 25: the change committed, then the kill took its event
        assert _state(mem.get(VICTIM, rec.id, include_deleted=True)) == before
        assert _events(mem, ACTION[op], rec.id) == []
    assert kill.run(url, "-", op, rec.id, script=CHILD) == 0  # run again, to its end
    with _open(url) as mem:
        after = mem.get(VICTIM, rec.id, include_deleted=True)
        assert _state(after) != before
        assert after.status is (RecordStatus.DELETED if op == "delete" else RecordStatus.ACTIVE)
        assert _events(mem, ACTION[op], rec.id) == ["ops25"]


def test_calls_whose_event_cannot_be_written_change_nothing(url: str) -> None:
    """Async: delete, restore (a turn, a fact, a document's chunk) and set_access each
    raise the database's refusal of the event, and leave the record as it was."""
    with _open(url) as mem:
        turn, gone = (
            r.id
            for r in mem.add_messages(
                VICTIM,
                [
                    {"role": "user", "content": "a heron by the lake"},
                    {"role": "user", "content": "an egret on the shore"},
                ],
            )
        )
        fact = ExtractedFact(category="home", key="city", value="Lyon", confidence=0.9)
        fact_id = mem.facts.upsert(U, fact).record.id
        chunk = mem.knowledge.ingest(U, "Ferries leave at noon.", "ferries")[0].id
        for rid in (gone, fact_id, chunk):
            mem.delete(U, rid)
        ids = (turn, gone, fact_id, chunk)
        before = {i: _state(mem.get(U, i, include_deleted=True)) for i in ids}
        events = len(mem.audit.query("acme"))
    _refuse_audit_inserts(url)

    async def calls() -> None:
        async with AsyncMemory(url, embedder="hashing", background=False, roles=["staff"]) as m:
            with pytest.raises(Exception, match="audit refused by d24"):
                await m.delete(U, turn)
            with pytest.raises(Exception, match="audit refused by d24"):
                await m.set_access(U, turn, allowed_roles=["staff"])
            for rid in (gone, fact_id, chunk):
                with pytest.raises(Exception, match="audit refused by d24"):
                    await m.restore(U, rid)

    asyncio.run(calls())
    with _open(url) as mem:
        assert {i: _state(mem.get(U, i, include_deleted=True)) for i in ids} == before
        assert len(mem.audit.query("acme")) == events


def test_each_call_records_one_event_naming_its_record(mem: Memory) -> None:
    """Every store (memory:// appends the event first, the others in the transaction)."""
    s = U
    turn = mem.add_messages(VICTIM, [{"role": "user", "content": "a heron by the lake"}])[0].id
    fact = ExtractedFact(category="home", key="city", value="Lyon", confidence=0.9)
    fact_id = mem.facts.upsert(s, fact).record.id
    chunk = mem.knowledge.ingest(s, "Ferries leave at noon.", "ferries")[0].id
    for rid in (turn, fact_id, chunk):
        assert mem.delete(s, rid, actor="a").status is RecordStatus.DELETED
        assert mem.restore(s, rid, actor="b").status is RecordStatus.ACTIVE
    shared = mem.set_access(s, turn, visibility="public", actor="c")
    assert mem.get(s, turn).version == shared.version
    got = [(e.action, e.actor, e.record_ids) for e in mem.audit.query("acme", user=s.user)]
    assert got == [
        *(
            x
            for rid in (turn, fact_id, chunk)
            for x in (("delete", "a", (rid,)), ("restore", "b", (rid,)))
        ),
        ("set_access", "c", (turn,)),
    ]
