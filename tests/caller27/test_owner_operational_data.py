"""A caller (another user reading what was shared) reads nothing of the owner's operations:
the owner's job queue is refused (HTTP 403 naming the fix), the stats count only the
records the caller may read and no job (a caller has no job in another user's memory), and
``flush`` through a caller's scope runs none of the owner's jobs (they write derived
records: a caller changes nothing).

Found by audit26, left for session 27: ``GET /v1/users/bob/jobs`` with a key bound to
carol listed bob's jobs (kinds, sessions, errors), the stats gave bob's pending and failed
job counts, and ``Memory.flush(carol's scope)`` ran bob's jobs. Fails before the fix."""

from __future__ import annotations

import asyncio

import pytest

from memstrata import AsyncMemory, Memory, Scope
from memstrata.errors import ValidationError

from .conftest import served  # noqa: F401

BOB = Scope("acme", "bob")
CAROL = BOB.as_caller("carol")


def _bob_with_jobs(mem: Memory) -> str:
    mem.add_message(BOB.with_session("s1"), "user", "I moved to Oslo last spring")
    rec = mem.add(BOB, "a note for carol")
    mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["carol"])
    assert mem.store.list_jobs("acme", "bob", status="pending")  # bob has queued jobs
    return rec.id


def test_a_callers_stats_count_what_it_reads_and_no_job(mem: Memory) -> None:
    _bob_with_jobs(mem)
    stats = mem.stats(CAROL)
    assert (stats["records"], stats["active"], stats["by_type"]) == (1, 1, {"note": 1})
    assert (stats["pending_jobs"], stats["failed_jobs"]) == (0, 0)
    assert mem.stats(BOB)["pending_jobs"] > 0  # the owner's own


def test_a_caller_runs_none_of_the_owners_jobs(mem: Memory) -> None:
    _bob_with_jobs(mem)
    before = mem.store.list_jobs("acme", "bob", status="pending")
    with pytest.raises(ValidationError, match="may read what 'bob' shared"):
        mem.flush(CAROL)
    assert mem.store.list_jobs("acme", "bob", status="pending") == before


def test_the_async_memory_too(url: str) -> None:
    async def main() -> None:
        async with AsyncMemory(url, embedder="hashing", background=False) as mem:
            await mem.add_message(BOB.with_session("s1"), "user", "I moved to Oslo")
            assert (await mem.stats(CAROL))["pending_jobs"] == 0
            with pytest.raises(ValidationError):
                await mem.flush(CAROL)
            assert await mem.store.list_jobs("acme", "bob", status="pending")

    asyncio.run(main())


def test_a_key_bound_to_another_user_reads_no_job(served) -> None:  # noqa: F811
    _bob_with_jobs(served.memory)
    carol = served.h(served.keys.create("acme", user="carol").secret)
    c = served.client
    r = c.get("/v1/users/bob/jobs", headers=carol)
    assert r.status_code == 403, r.text
    assert "jobs" in r.json()["error"]["message"] and "bob" in r.json()["error"]["message"]
    stats = c.get("/v1/users/bob/stats", headers=carol)
    assert stats.status_code == 200, stats.text
    assert (stats.json()["pending_jobs"], stats.json()["records"]) == (0, 1)
    bob = served.h(served.keys.create("acme", user="bob").secret)
    assert c.get("/v1/users/bob/jobs", headers=bob).json()["jobs"]  # the owner's own
    assert c.get("/v1/users/carol/jobs", headers=carol).status_code == 200  # carol's own
