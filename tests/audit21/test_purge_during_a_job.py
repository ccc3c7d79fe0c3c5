"""A purge while this process's worker runs one of the user's jobs: the job, already past
reading the user's turns, writes what it derived (facts, clusters, summaries) after the
purge. Before audit21 those records brought the purged user (or the purged turns' words)
back (the purge's report said 0 remaining); now the purge waits for the job and purges
again."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from aio.helpers import SlowEmbedder
from memstrata import AsyncMemory, Filters, Memory, Scope

ALICE = Scope("acme", "alice", session="s1")
TURNS = [
    {"role": "user", "content": "My name is Alice and I live in Lisbon. I am allergic to peanuts."},
    {"role": "assistant", "content": "Noted, Alice: Lisbon, and no peanuts."},
]
EVERYTHING = Filters(include_deleted=True, include_superseded=True)


def _release_soon(release: threading.Event) -> None:
    threading.Timer(0.3, release.set).start()  # while the purge is under way


def test_sync_purge_while_the_background_thread_runs_a_job(url: str) -> None:
    slow = SlowEmbedder(0.0)
    with Memory(url, embedder=slow, background=True) as mem:
        mem.add_messages(ALICE, TURNS)  # type: ignore[arg-type]
        slow.release = threading.Event()
        slow.started.clear()
        assert slow.started.wait(10)  # the worker's job is embedding what it derived
        _release_soon(slow.release)
        report = mem.purge(ALICE)
    # closed: the worker's job has ended
    with Memory(url, embedder="hashing", background=False) as again:
        left = again.list(ALICE.user_scope, filters=EVERYTHING, limit=1000)
    assert [(r.type.value, r.text) for r in left] == []
    assert report.remaining == 0


def test_async_purge_while_the_background_task_runs_a_job(url: str) -> None:
    async def main() -> list[str]:
        slow = SlowEmbedder(0.0)
        async with AsyncMemory(url, embedder=slow, background=True) as mem:
            await mem.add_messages(ALICE, TURNS)  # type: ignore[arg-type]
            slow.release = threading.Event()
            slow.started.clear()
            assert await asyncio.to_thread(slow.started.wait, 10)
            _release_soon(slow.release)
            await mem.purge(ALICE)
        # closed: the worker's job has ended
        async with AsyncMemory(url, embedder="hashing", background=False) as again:
            left = await again.list(ALICE.user_scope, filters=EVERYTHING, limit=1000)
        return [r.text for r in left]

    assert asyncio.run(main()) == []


def test_a_record_purge_while_a_job_derives_from_the_record(url: str) -> None:
    """The same for ``purge(scope, ids)``: the job's facts cited the purged turns and
    repeated their words ("location: Lisbon", "allergy: peanuts")."""
    slow = SlowEmbedder(0.0)
    with Memory(url, embedder=slow, background=True) as mem:
        kept = mem.add(ALICE, "Alice has a cat named Tom")
        turns = mem.add_messages(ALICE, TURNS)  # type: ignore[arg-type]
        slow.release = threading.Event()
        slow.started.clear()
        assert slow.started.wait(10)
        _release_soon(slow.release)
        mem.purge(ALICE, [t.id for t in turns])
    with Memory(url, embedder="hashing", background=False) as again:
        left = again.list(ALICE.user_scope, filters=EVERYTHING, limit=1000)
    assert [r.id for r in left] == [kept.id]


def test_a_purge_made_by_a_job_of_the_user_does_not_wait_for_itself(tmp_path: Path) -> None:
    """The wait skips the caller's own job (a handler purging its own user would wait
    for itself forever)."""
    done = threading.Event()
    with Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", background=False) as mem:

        def purge_my_user(job: object) -> None:
            mem.purge(ALICE)
            done.set()

        mem.add_messages(ALICE, TURNS)  # type: ignore[arg-type]
        mem._runner._handlers["ingest"] = purge_my_user  # noqa: SLF001
        mem.flush()
    assert done.is_set()


@pytest.fixture(autouse=True)
def _quiet_lease_warnings(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("ERROR", logger="memstrata.worker")
