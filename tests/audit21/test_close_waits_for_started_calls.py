"""A call that runs to its end once started (``delete``, ``restore``, ``purge``,
``set_access``, ``forget``, ``end_session``: two or more commits each) goes on after its
caller is cancelled; ``aclose`` right after must let it finish, not close the store under
it. Before audit21 a delete cancelled and then closed left the record deleted with no audit
event (or, closed a moment earlier, nothing done), and no error anywhere."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from aio.helpers import threads
from memstrata import AsyncMemory, MemoryRecord, Scope

ALICE = Scope("acme", "alice", session="s1")
Op = Callable[[AsyncMemory, list[MemoryRecord]], Awaitable[object]]


async def _delete(mem: AsyncMemory, recs: list[MemoryRecord]) -> object:
    return await mem.delete(ALICE, recs[0].id)


async def _set_access(mem: AsyncMemory, recs: list[MemoryRecord]) -> object:
    # public: a note is shared already, and the rules it has change nothing (session 27)
    return await mem.set_access(ALICE, recs[0].id, visibility="public")


async def _purge_one(mem: AsyncMemory, recs: list[MemoryRecord]) -> object:
    return await mem.purge(ALICE, [recs[0].id])


async def _forget(mem: AsyncMemory, recs: list[MemoryRecord]) -> object:
    return await mem.forget(ALICE, [recs[0].id])


OPS: dict[str, tuple[Op, str]] = {
    "delete": (_delete, "delete"),
    "set_access": (_set_access, "set_access"),
    "purge": (_purge_one, "purge"),
    "forget": (_forget, "forget"),
}


def _done(rec: MemoryRecord | None, op: str) -> bool:
    """Whether the write part of ``op`` reached the store."""
    if op == "purge":
        return rec is None
    assert rec is not None
    if op == "set_access":
        return rec.access.visibility.value == "public"
    return rec.status.value == "deleted"


async def _one(url: str, op: str, steps: int) -> tuple[bool, bool]:
    """``op`` cancelled after ``steps`` turns of the loop, the memory closed at once;
    then, reopened: (whether the write is there, whether its audit event is)."""
    call, action = OPS[op]
    mem = AsyncMemory(url, embedder="hashing", background=False)
    await mem.open()
    recs = [await mem.add(ALICE, f"note {steps} about the {op} of topic {i}") for i in range(2)]
    task = asyncio.create_task(call(mem, recs))
    for _ in range(steps):
        await asyncio.sleep(0)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await mem.aclose()
    async with AsyncMemory(url, embedder="hashing", background=False) as again:
        found = await again.list(ALICE, filters={"ids": [recs[0].id], "include_deleted": True})
        events = await again.audit.query(ALICE.tenant, action=action)
    return _done(found[0] if found else None, op), bool(events)


@pytest.mark.parametrize("op", sorted(OPS))
def test_close_after_a_cancelled_call_lets_it_finish(url: str, op: str, tmp_path: Path) -> None:
    async def main() -> list[tuple[int, bool, bool]]:
        seen = []
        for steps in (1, 2, 3, 5, 8, 12, 20):
            wrote, audited = await _one(url, op, steps)
            seen.append((steps, wrote, audited))
        return seen

    seen = asyncio.run(main())
    # all or nothing: never a write without its audit event (or the event alone) ...
    assert all(wrote == audited for _, wrote, audited in seen), seen
    # ... and a call that started runs to its end: the memory was open when it began
    assert all(wrote for _, wrote, _ in seen), seen


def test_the_error_of_a_call_whose_caller_has_gone_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Its caller cancelled, a failing delete has no one to raise to: the log says so."""

    async def main() -> None:
        async with AsyncMemory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing") as mem:
            task = asyncio.create_task(mem.delete(ALICE, "no-such-record"))
            await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    with caplog.at_level("ERROR", logger="memstrata.aio"):
        asyncio.run(main())
    assert "delete, whose caller was cancelled, failed" in caplog.text
    assert "NotFoundError" in caplog.text


def test_a_cancelled_end_session_still_runs_its_jobs_when_closed_at_once(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """``end_session`` flushes the session's jobs itself; closed while it runs, the memory
    still serves that flush (it refused it as closed, logged as an error, jobs left)."""

    async def main() -> int:
        mem = AsyncMemory(url, embedder="hashing", background=False)
        await mem.open()
        await mem.add_messages(
            ALICE,
            [
                {"role": "user", "content": "I moved to Porto last spring"},  # type: ignore[list-item]
                {"role": "assistant", "content": "Porto is a lovely city by the river"},  # type: ignore[list-item]
            ],
        )
        task = asyncio.create_task(mem.end_session(ALICE))
        await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await mem.aclose()
        async with AsyncMemory(url, embedder="hashing", background=False) as again:
            return int((await again.stats(ALICE))["pending_jobs"])

    with caplog.at_level("ERROR", logger="memstrata.aio"):
        pending = asyncio.run(main())
    assert "failed" not in caplog.text
    assert pending == 0


def _connections(request: pytest.FixtureRequest, url: str) -> int:
    """The PostgreSQL server's client connections (0 on SQLite)."""
    if not url.startswith("postgresql"):
        return 0
    import psycopg

    admin = request.getfixturevalue("pg_server").admin_url
    with psycopg.connect(admin, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
        ).fetchone()
    assert row is not None
    return int(row[0]) - 1  # not this one


def test_a_cancelled_close_still_closes_and_a_second_one_waits(
    url: str, request: pytest.FixtureRequest
) -> None:
    """``async with asyncio.timeout(...)`` around a memory cancels its ``aclose`` when time
    is up: the close went no further, the second ``aclose`` returned at once (the memory
    was marked closed), and the store stayed open for good with its threads (SQLite) or its
    pool's connections (PostgreSQL)."""
    before, connections = threads(), _connections(request, url)

    async def main() -> None:
        for steps in range(8):
            mem = AsyncMemory(url, embedder="hashing", background=True)
            await mem.open()
            await mem.add(ALICE, f"a note before close {steps}")
            task = asyncio.create_task(mem.aclose())
            for _ in range(steps):
                await asyncio.sleep(0)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await mem.aclose()  # waits for the first close's work

    asyncio.run(main())
    assert threads() == before
    assert _connections(request, url) == connections
