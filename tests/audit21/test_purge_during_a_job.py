"""A purge while this process's worker runs one of the user's jobs: the job, already past
reading the user's turns, writes what it derived (facts, clusters, summaries) after the
purge. Before audit21 those records brought the purged user (or the purged turns' words)
back (the purge's report said 0 remaining); now the purge waits for the job and purges
again."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from embedders import WrappedHashing
from memstrata import AsyncMemory, Filters, Memory, Scope
from memstrata.embedder.base import Matrix

ALICE = Scope("acme", "alice", session="s1")
TURNS = [
    {"role": "user", "content": "My name is Alice and I live in Lisbon. I am allergic to peanuts."},
    {"role": "assistant", "content": "Noted, Alice: Lisbon, and no peanuts."},
]
EVERYTHING = Filters(include_deleted=True, include_superseded=True)


class Gated(WrappedHashing):
    """The hashing embedder, whose calls after the first ``free`` (the caller's own
    writes) wait for ``gate``: the worker's job is held while it embeds what it derived."""

    def __init__(self, free: int) -> None:
        super().__init__()
        self.free = free
        self.calls = 0
        self.gate = threading.Event()
        self.blocked = threading.Event()

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        self.calls += 1
        if self.calls > self.free:
            self.blocked.set()
            assert self.gate.wait(10), "the test never opened the gate"
        return super().embed_batch(texts, query=query)

    def open_soon(self) -> None:
        threading.Timer(0.3, self.gate.set).start()  # while the purge is under way


def test_sync_purge_while_the_background_thread_runs_a_job(url: str) -> None:
    gated = Gated(free=1)
    with Memory(url, embedder=gated, background=True) as mem:
        mem.add_messages(ALICE, TURNS)  # type: ignore[arg-type]
        assert gated.blocked.wait(10)  # the worker's job is embedding what it derived
        gated.open_soon()
        report = mem.purge(ALICE)
    # closed: the worker's job has ended
    with Memory(url, embedder="hashing", background=False) as again:
        left = again.list(ALICE.user_scope, filters=EVERYTHING, limit=1000)
    assert [(r.type.value, r.text) for r in left] == []
    assert report.remaining == 0


def test_async_purge_while_the_background_task_runs_a_job(url: str) -> None:
    async def main() -> list[str]:
        gated = Gated(free=1)
        async with AsyncMemory(url, embedder=gated, background=True) as mem:
            await mem.add_messages(ALICE, TURNS)  # type: ignore[arg-type]
            assert await asyncio.to_thread(gated.blocked.wait, 10)
            gated.open_soon()
            await mem.purge(ALICE)
        # closed: the worker's job has ended
        async with AsyncMemory(url, embedder="hashing", background=False) as again:
            left = await again.list(ALICE.user_scope, filters=EVERYTHING, limit=1000)
        return [r.text for r in left]

    assert asyncio.run(main()) == []


def test_a_record_purge_while_a_job_derives_from_the_record(url: str) -> None:
    """The same for ``purge(scope, ids)``: the job's facts cited the purged turns and
    repeated their words ("location: Lisbon", "allergy: peanuts")."""
    gated = Gated(free=2)
    with Memory(url, embedder=gated, background=True) as mem:
        kept = mem.add(ALICE, "Alice has a cat named Tom")
        turns = mem.add_messages(ALICE, TURNS)  # type: ignore[arg-type]
        assert gated.blocked.wait(10)
        gated.open_soon()
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
        flushing = threading.Thread(target=mem.flush, daemon=True)
        flushing.start()
        flushing.join(10)  # waiting for itself, it would never end
        assert done.is_set()


@pytest.fixture(autouse=True)
def _quiet_lease_warnings(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("ERROR", logger="memstrata.worker")
