"""A record's ``version`` counted every write of the owner: carol, shown a note bob edited in
private before he shared it, saw version 4 where her history held two versions (3 and 4), so
she learnt of two versions she was never shown. A caller never writes (no optimistic lock to
serve), so a caller is now shown the number of the version among those it may read: its
history numbered 1, 2, ... and the record, wherever read, the number of its version there
(``store/caller_view.py``). The owner's versions are unchanged. Fails before the fix."""

from __future__ import annotations

import asyncio

from memstrata import AsyncMemory, Memory, Scope

BOB = Scope("acme", "bob")
CAROL = BOB.as_caller("carol")


def _edited_then_shared(mem: Memory) -> str:
    rec = mem.add(BOB, "harbour note, first draft")
    rec = mem.update(BOB, rec.id, content="harbour note, private edit", expected_version=1)
    rec = mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["carol"])
    mem.update(BOB, rec.id, content="harbour note, shared edit", expected_version=rec.version)
    return rec.id


def test_a_caller_sees_no_count_of_unshared_versions(mem: Memory) -> None:
    rid = _edited_then_shared(mem)
    assert [v.version for v in mem.history(BOB, rid)] == [1, 2, 3, 4]  # the owner's
    assert mem.get(BOB, rid).version == 4
    assert [v.version for v in mem.history(CAROL, rid)] == [1, 2]
    assert mem.get(CAROL, rid).version == 2
    assert [r.version for r in mem.list(CAROL) if r.id == rid] == [2]
    assert [h.record.version for h in mem.search(CAROL, "harbour note")] == [2]


def test_a_gap_of_unshared_versions_does_not_show(mem: Memory) -> None:
    rec = mem.add(BOB, "ferry times")
    rec = mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["carol"])  # v2
    rec = mem.set_access(BOB, rec.id, visibility="shared", allowed_users=[])  # v3: unshared
    rec = mem.update(BOB, rec.id, content="ferry times, private", expected_version=rec.version)
    mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["carol"])  # v5
    assert [v.version for v in mem.history(CAROL, rec.id)] == [1, 2]
    assert mem.get(CAROL, rec.id).version == 2


def test_a_record_never_edited_is_version_one(mem: Memory) -> None:
    rec = mem.add(BOB, "shared at once", visibility="public")
    assert mem.get(CAROL, rec.id).version == 1
    assert [v.version for v in mem.history(CAROL, rec.id)] == [1]


def test_async_a_caller_sees_no_count_of_unshared_versions(url: str) -> None:
    async def run() -> None:
        async with AsyncMemory(url, embedder="hashing", background=False) as mem:
            rec = await mem.add(BOB, "harbour note")
            rec = await mem.update(BOB, rec.id, content="harbour, private", expected_version=1)
            await mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["carol"])
            assert (await mem.get(CAROL, rec.id)).version == 1
            assert [v.version for v in await mem.history(CAROL, rec.id)] == [1]
            assert (await mem.get(BOB, rec.id)).version == 3

    asyncio.run(run())


def test_a_key_bound_to_another_user_sees_the_numbered_version(served) -> None:  # type: ignore[no-untyped-def]
    mem: Memory = served.memory
    rid = _edited_then_shared(mem)
    c = served.client
    h = served.h(served.keys.create("acme", user="carol").secret)
    got = c.get(f"/v1/users/bob/memories/{rid}", headers=h)
    assert got.status_code == 200 and got.json()["version"] == 2, got.text
    history = c.get(f"/v1/users/bob/memories/{rid}/history", headers=h)
    assert [v["version"] for v in history.json()["records"]] == [1, 2], history.text
    owner = served.h(served.keys.create("acme", user="bob").secret)
    assert c.get(f"/v1/users/bob/memories/{rid}", headers=owner).json()["version"] == 4
