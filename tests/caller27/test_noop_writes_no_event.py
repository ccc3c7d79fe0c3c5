"""An audit event records a change that happened: deleting a deleted record or restoring a
live one changes nothing, so it writes no event (it still returns the record as stored,
as before: a repeated delete is an idempotent success, not a NotFound). A delete or
restore that changes the record writes exactly one event, as before.

Found by audit26, left for session 27: every delete and restore wrote its event whatever
the record's state, so the log showed deletes and restores that never happened. Fails
before the fix (``Memory.delete`` / ``restore`` / ``_set_status``)."""

from __future__ import annotations

import asyncio

from memstrata import AsyncMemory, Memory, Scope
from memstrata.llm.models import ExtractedFact

from .conftest import served  # noqa: F401

BOB = Scope("acme", "bob")


def _actions(mem: Memory, rid: str) -> list[str]:
    return [e.action for e in mem.audit.query("acme", record_id=rid)]


def test_a_repeated_delete_writes_one_event(mem: Memory) -> None:
    rid = mem.add(BOB, "a note to delete twice").id
    first = mem.delete(BOB, rid)
    again = mem.delete(BOB, rid)
    assert first.status == again.status == "deleted" and again.version == first.version
    assert _actions(mem, rid) == ["delete"]


def test_restoring_a_live_record_writes_no_event(mem: Memory) -> None:
    rid = mem.add(BOB, "a live note").id
    got = mem.restore(BOB, rid)
    assert got.status == "active" and got.version == 1
    assert _actions(mem, rid) == []
    mem.delete(BOB, rid)
    mem.restore(BOB, rid)
    mem.restore(BOB, rid)
    assert _actions(mem, rid) == ["delete", "restore"]


def test_a_live_fact_and_a_live_chunk_restore_with_no_event(mem: Memory) -> None:
    fact = mem.facts.upsert(
        BOB, ExtractedFact(category="home", key="city", value="Oslo", confidence=0.9)
    )
    chunk = mem.knowledge.ingest(BOB, "A short document about ferries.")[0]
    for rid in (fact.record.id, chunk.id):
        assert mem.restore(BOB, rid).status == "active"
        assert _actions(mem, rid) == []


def test_the_async_memory_writes_one_event_too(url: str) -> None:
    async def main() -> None:
        async with AsyncMemory(url, embedder="hashing", background=False) as mem:
            rid = (await mem.add(BOB, "a note")).id
            await mem.restore(BOB, rid)
            await mem.delete(BOB, rid)
            await mem.delete(BOB, rid)
            got = [e.action for e in await mem.audit.query("acme", record_id=rid)]
            assert got == ["delete"]

    asyncio.run(main())


def test_http_repeated_delete_writes_one_event(served) -> None:  # noqa: F811
    rid = served.memory.add(BOB, "a note deleted over HTTP").id
    h = served.h(served.admin)
    for _ in range(2):
        r = served.client.delete(f"/v1/users/bob/memories/{rid}", headers=h)
        assert r.is_success, r.text
    r = served.client.post(f"/v1/users/bob/memories/{rid}/restore", headers=h)
    assert r.is_success, r.text
    assert served.client.post(f"/v1/users/bob/memories/{rid}/restore", headers=h).is_success
    events = served.client.get(f"/v1/audit?record_id={rid}", headers=h)
    assert events.status_code == 200, events.text
    assert [e["action"] for e in events.json()["events"]] == ["delete", "restore"]


def test_setting_the_access_a_record_has_writes_nothing(mem: Memory) -> None:
    """A second ``set_access`` with the same rules wrote a version and a ``set_access``
    event for a change that did not happen (found by caller27's audit; fails before)."""
    rid = mem.add(BOB, "a note to share").id
    shared = mem.set_access(BOB, rid, visibility="shared", allowed_users=["carol"])
    again = mem.set_access(BOB, rid, visibility="shared", allowed_users=["carol"])
    assert again == shared == mem.get(BOB, rid) and again.version == 2
    assert _actions(mem, rid) == ["set_access"]
    mem.set_access(BOB, rid, allowed_users=["carol", "dave"])
    assert _actions(mem, rid) == ["set_access", "set_access"]
