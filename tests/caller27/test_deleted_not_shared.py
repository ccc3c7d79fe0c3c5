"""A deleted record is not shared any more: a caller (``Scope.as_caller``) reading the
owner's memory finds it exactly as it finds a missing id — by id with ``include_deleted``,
in a list of deleted records, through its history, in an export, in a search, in the stats
— while the owner still reads it and restores it (after which the caller sees it again).

Found by audit26, left for session 27: the caller rule (``Scope.admits`` and every store's
SQL mirror of it) looked at the access only, so a caller read a shared record the owner had
deleted through every path that reads deleted records. Every test here fails before the fix
(``Scope.admits`` takes the status; ``scope_sql`` of SQLite and PostgreSQL mirror it)."""

from __future__ import annotations

import asyncio
import io
import json

import pytest

from memstrata import AsyncMemory, Memory, Scope
from memstrata.errors import NotFoundError
from memstrata.filters import Filters

from .conftest import served  # noqa: F401

BOB = Scope("acme", "bob")
CAROL = BOB.as_caller("carol")
DELETED = Filters(include_deleted=True, include_superseded=True)
WORDS = "the deleted plan is quetzalcoatl"


def _shared_then_deleted(mem: Memory) -> str:
    rec = mem.add(BOB, WORDS)
    mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["carol"])
    assert mem.get(CAROL, rec.id).text == WORDS  # shared: the caller reads it
    mem.delete(BOB, rec.id)
    return rec.id


def _message(exc: pytest.ExceptionInfo[NotFoundError], rid: str) -> str:
    return str(exc.value).replace(rid, "<id>")


def test_a_caller_cannot_get_a_deleted_shared_record(mem: Memory) -> None:
    rid = _shared_then_deleted(mem)
    with pytest.raises(NotFoundError) as deleted:
        mem.get(CAROL, rid, include_deleted=True)
    with pytest.raises(NotFoundError) as missing:
        mem.get(CAROL, "0" * 32, include_deleted=True)
    assert _message(deleted, rid) == _message(missing, "0" * 32)  # nothing tells them apart


def test_a_caller_lists_no_deleted_shared_record(mem: Memory) -> None:
    rid = _shared_then_deleted(mem)
    assert [r.id for r in mem.list(CAROL, filters=DELETED)] == []
    assert [r.id for r in mem.list(CAROL, filters={"include_deleted": True, "ids": [rid]})] == []


def test_a_caller_reads_no_history_of_a_deleted_shared_record(mem: Memory) -> None:
    rid = _shared_then_deleted(mem)
    with pytest.raises(NotFoundError):
        mem.history(CAROL, rid)
    assert mem.store.histories(CAROL, [rid]) == {}


def test_a_callers_search_finds_no_deleted_shared_record(mem: Memory) -> None:
    _shared_then_deleted(mem)
    for mode in ("lexical", "dense", "hybrid"):
        found = mem.search(CAROL, "deleted plan quetzalcoatl", mode=mode, filters=DELETED)
        assert found == [], mode
    assert WORDS not in mem.build_context(CAROL, "the deleted plan", 2000).text
    assert mem.search(BOB, "quetzalcoatl", filters=DELETED, mode="lexical")  # the owner's


def test_an_export_through_a_caller_holds_no_deleted_record(mem: Memory) -> None:
    _shared_then_deleted(mem)
    buf = io.StringIO()
    assert mem.export_records(CAROL, buf) == 0  # include_deleted is the default
    assert WORDS not in buf.getvalue()


def test_a_callers_stats_count_no_deleted_record(mem: Memory) -> None:
    _shared_then_deleted(mem)
    stats = mem.stats(CAROL)
    assert (stats["records"], stats["deleted"], stats["by_type"]) == (0, 0, {})


def test_the_owner_still_reads_and_restores_and_the_caller_sees_it_again(mem: Memory) -> None:
    rid = _shared_then_deleted(mem)
    assert mem.get(BOB, rid, include_deleted=True).status == "deleted"
    assert [r.id for r in mem.list(BOB, filters=DELETED)] == [rid]
    assert len(mem.history(BOB, rid)) == 3  # added, shared, deleted
    mem.restore(BOB, rid)
    assert mem.get(CAROL, rid).text == WORDS
    # the shared version and the restored one (numbered among what carol was shown, caller28)
    assert [v.version for v in mem.history(CAROL, rid)] == [1, 2]
    assert mem.get(BOB, rid).version == 4


def test_the_async_memory_hides_it_too(url: str) -> None:
    async def main() -> None:
        async with AsyncMemory(url, embedder="hashing", background=False) as mem:
            rec = await mem.add(BOB, WORDS)
            await mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["carol"])
            await mem.delete(BOB, rec.id)
            with pytest.raises(NotFoundError):
                await mem.get(CAROL, rec.id, include_deleted=True)
            with pytest.raises(NotFoundError):
                await mem.history(CAROL, rec.id)
            assert await mem.list(CAROL, filters=DELETED) == []
            assert (await mem.get(BOB, rec.id, include_deleted=True)).id == rec.id

    asyncio.run(main())


def test_a_key_bound_to_another_user_reads_no_deleted_record(served) -> None:  # noqa: F811
    mem: Memory = served.memory
    rid = _shared_then_deleted(mem)
    h = served.h(served.keys.create("acme", user="carol").secret)
    c = served.client
    got = c.get(f"/v1/users/bob/memories/{rid}?include_deleted=true", headers=h)
    missing = c.get(f"/v1/users/bob/memories/{'0' * 32}?include_deleted=true", headers=h)
    assert got.status_code == missing.status_code == 404, got.text
    assert got.json()["error"]["code"] == missing.json()["error"]["code"]
    assert c.get(f"/v1/users/bob/memories/{rid}/history", headers=h).status_code == 404
    listed = c.get("/v1/users/bob/memories?include_deleted=true", headers=h)
    assert listed.status_code == 200 and WORDS not in listed.text, listed.text
    exported = c.get("/v1/users/bob/export", headers=h)
    assert exported.status_code == 200 and WORDS not in exported.text
    assert json.loads(exported.text.splitlines()[-1])["end"] == "complete"
    owner = served.h(served.keys.create("acme", user="bob").secret)
    assert c.get(f"/v1/users/bob/memories/{rid}?include_deleted=true", headers=owner).is_success
