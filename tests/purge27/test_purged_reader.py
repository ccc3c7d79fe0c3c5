"""A whole-user purge takes the user out of what other users shared with them: the
readers of every version of the other users' records, and the readers their set_access
events list. The records and events stay (they are the other users'), with their other
readers; a record whose only reader was the purged user stays its owner's, shared with
nobody. Every store, sync and async (store/purged_reader.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memstrata import AsyncMemory, Memory, Scope
from memstrata.errors import ConflictError, NotFoundError

BOB = Scope("acme", "bob")
CAROL_ID = "carol.smith@example.com"
CAROL = Scope("acme", CAROL_ID)


def _share(mem: Memory) -> tuple[str, str, str]:
    """Three of bob's records: shared with carol and dave (after versions with carol
    alone), shared with carol only, and once shared with carol but no longer."""
    mem.add(CAROL, "carol's own note")
    both = mem.add(BOB, "bob's door code is 4471")
    mem.set_access(BOB, both.id, visibility="shared", allowed_users=[CAROL_ID])
    cur = mem.get(BOB, both.id)
    mem.update(BOB, both.id, expected_version=cur.version, content="bob's door code is 4472")
    mem.set_access(BOB, both.id, allowed_users=[CAROL_ID, "dave"])
    only = mem.add(BOB, "bob's bank pin is 9931")
    mem.set_access(BOB, only.id, visibility="shared", allowed_users=[CAROL_ID])
    past = mem.add(BOB, "bob's bike lock is 1203")
    mem.set_access(BOB, past.id, visibility="shared", allowed_users=["erin", CAROL_ID])
    mem.set_access(BOB, past.id, allowed_users=["erin"])
    for rid in (both.id, only.id):
        assert mem.get(BOB.as_caller(CAROL_ID), rid).id == rid  # shared before
    return both.id, only.id, past.id


def _check_after(mem: Memory, ids: tuple[str, str, str], before: dict[str, int]) -> None:
    both, only, past = ids
    for rid in ids:
        with pytest.raises(NotFoundError):  # a new carol reads nothing shared with the old
            mem.get(BOB.as_caller(CAROL_ID), rid)
        versions = mem.history(BOB, rid)
        assert all(CAROL_ID not in v.access.allowed_users for v in versions)
        assert versions[-1].version == before[rid] + 1  # a new version, no reader more
    assert mem.get(BOB.as_caller("dave"), both).content.raw == "bob's door code is 4472"
    assert mem.get(BOB.as_caller("erin"), past).id == past
    kept = mem.get(BOB, only)
    assert (kept.access.visibility.value, kept.access.allowed_users) == ("shared", ())
    assert kept.content.raw == "bob's bank pin is 9931"
    # the earlier versions keep their other readers and their own text
    hist = mem.history(BOB, both)
    assert [v.access.allowed_users for v in hist] == [(), (), (), ("dave",), ("dave",)]
    assert hist[0].content.raw == "bob's door code is 4471"
    # the events stay, without carol among their readers
    events = mem.audit.query("acme", action="set_access")
    assert len(events) == 5
    assert [e.details["allowed_users"] for e in events] == [[], ["dave"], [], ["erin"], ["erin"]]
    assert all(e.user == "bob" for e in events)
    assert CAROL_ID not in str([e.as_dict() for e in mem.audit.query("acme")])
    assert not mem.search(BOB.as_caller(CAROL_ID), "bob's door code bank pin", mode="lexical")


def test_the_purged_users_id_leaves_every_version_and_event(mem: Memory) -> None:
    ids = _share(mem)
    before = {rid: mem.get(BOB, rid).version for rid in ids}
    updated = {rid: mem.get(BOB, rid).updated_at for rid in ids}
    report = mem.purge(CAROL)
    assert report.remaining == 0
    _check_after(mem, ids, before)
    assert {rid: mem.get(BOB, rid).updated_at for rid in ids} == updated
    # a new carol, created later, has her own records and no one else's
    mem.add(CAROL, "the new carol's note")
    assert [r.content.raw for r in mem.list(CAROL)] == ["the new carol's note"]


def test_a_write_based_on_the_version_before_the_purge_is_refused(mem: Memory) -> None:
    """The purge gives the record a new version: a read-modify-write that began before it
    cannot write the purged reader back."""
    both, _, _ = _share(mem)
    read = mem.get(BOB, both)
    mem.purge(CAROL)
    with pytest.raises(ConflictError):
        mem.update(BOB, both, expected_version=read.version, content="stale")
    assert CAROL_ID not in mem.get(BOB, both).access.allowed_users


def test_a_record_never_shared_with_them_keeps_its_version(mem: Memory) -> None:
    rec = mem.add(BOB, "bob's plain note")
    mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["carol.smith"])  # a prefix
    mem.set_access(BOB, rec.id, allowed_users=["x" + CAROL_ID])  # and a longer id
    mem.add(CAROL, "carol's own note")
    version = mem.get(BOB, rec.id).version
    mem.purge(CAROL)
    assert mem.get(BOB, rec.id).version == version
    assert [v.access.allowed_users for v in mem.history(BOB, rec.id)][1:] == [
        ("carol.smith",),
        ("x" + CAROL_ID,),
    ]
    events = mem.audit.query("acme", action="set_access")
    assert [e.details["allowed_users"] for e in events] == [["carol.smith"], ["x" + CAROL_ID]]


@pytest.mark.parametrize("store", ["sqlite", "memory", "postgresql"])
def test_async(store: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = {"sqlite": f"sqlite:///{tmp_path / 'a.db'}", "memory": "memory://"}.get(store)
    if url is None:
        url = request.getfixturevalue("pg_url")

    async def main() -> None:
        mem = AsyncMemory(url, embedder="hashing", background=False)
        try:
            await mem.add(CAROL, "carol's own note")
            rec = await mem.add(BOB, "bob's door code is 4471")
            await mem.set_access(BOB, rec.id, visibility="shared", allowed_users=[CAROL_ID, "d"])
            only = await mem.add(BOB, "bob's bank pin is 9931")
            await mem.set_access(BOB, only.id, visibility="shared", allowed_users=[CAROL_ID])
            assert (await mem.purge(CAROL)).remaining == 0
            for rid in (rec.id, only.id):
                with pytest.raises(NotFoundError):
                    await mem.get(BOB.as_caller(CAROL_ID), rid)
                assert all(
                    CAROL_ID not in v.access.allowed_users for v in await mem.history(BOB, rid)
                )
            assert (await mem.get(BOB.as_caller("d"), rec.id)).id == rec.id
            events = await mem.audit.query("acme", action="set_access")
            assert [e.details["allowed_users"] for e in events] == [["d"], []]
        finally:
            await mem.close()

    asyncio.run(main())
