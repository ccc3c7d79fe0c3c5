"""``sweep_done_jobs`` is part of the job queue's protocol (``store.base.JobQueue``, its
async twin ``AsyncJobQueue``), and maintenance calls it as such.

Before session 33 maintenance found it with ``getattr(store, "sweep_done_jobs", None)``
and swept nothing, silently, from a store without it: such a store still passed for a
``Store`` (``isinstance``), and mypy checked no caller's arguments against the method."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memstrata import Memory, Scope
from memstrata._async.store.base import AsyncJobQueue, AsyncStore
from memstrata.aio import AsyncMemory
from memstrata.jobs import DONE_SWEEP_BATCH, Job, JobStatus
from memstrata.store.base import JobQueue, Store
from memstrata.store.caller_view import CallerViewStore
from memstrata.store.memory import InMemoryStore

NOW = datetime.now(UTC)


def _jobs(tag: str) -> list[Job]:
    """Two done jobs due 30 days ago, one due 3 days ago, one failed 30 days ago."""
    ages = (("a", 30, JobStatus.DONE), ("b", 30, JobStatus.DONE), ("c", 3, JobStatus.DONE),
            ("d", 30, JobStatus.FAILED))  # fmt: skip
    return [
        Job(
            id=f"{name}-{tag}",
            kind="k",
            tenant="t",
            user="u",
            payload={},
            created_at=NOW - timedelta(days=age),
            run_after=NOW - timedelta(days=age),
            status=status,
        )  # fmt: skip
        for name, age, status in ages
    ]


def test_the_protocols_declare_it() -> None:
    for protocol in (JobQueue, AsyncJobQueue):
        assert "sweep_done_jobs" in protocol.__dict__, protocol


class _Without:
    """A store that has every other method of ``InMemoryStore`` but no sweep."""

    def __init__(self) -> None:
        self._inner = InMemoryStore()

    def __getattr__(self, name: str) -> Any:
        if name == "sweep_done_jobs":
            raise AttributeError(name)
        return getattr(self._inner, name)


def test_a_store_without_it_is_no_store() -> None:
    without = _Without()
    assert not isinstance(without, JobQueue) and not isinstance(without, Store)
    assert isinstance(InMemoryStore(), Store)


@pytest.mark.parametrize("kind", ["sqlite", "memory", "postgresql", "sqlite+redis"])
def test_every_store_and_wrapper_sweeps(
    request: pytest.FixtureRequest, tmp_path: Any, kind: str
) -> None:
    url = {"sqlite": f"sqlite:///{tmp_path / 's.db'}", "memory": "memory://"}.get(kind)
    if url is None:
        url = (
            request.getfixturevalue("pg_url")
            if kind == "postgresql"
            else f"sqlite:///{tmp_path / 'r.db'}"
        )
    buffer = request.getfixturevalue("redis_buffer_url") if "redis" in kind else None
    before = NOW - timedelta(days=7)
    with Memory(url, embedder="hashing", background=False, buffer=buffer) as mem:
        stores: list[Any] = [mem.store, CallerViewStore(mem.store)]
        for tag, store in zip(("store", "view"), stores, strict=True):
            assert isinstance(store, Store), (kind, store)
            store.enqueue(_jobs(tag))
            assert store.sweep_done_jobs(before, 1) == 1
            assert store.sweep_done_jobs(before) == 1  # the default batch
            assert store.sweep_done_jobs(before, DONE_SWEEP_BATCH) == 0
            left = {j.id for j in store.list_jobs("t", "u") if j.id.endswith(tag)}
            assert left == {f"c-{tag}", f"d-{tag}"}, (kind, store)
        # a maintenance pass sweeps through the protocol (7 days by default)
        mem.store.enqueue(_jobs("maintain"))
        assert mem.maintain(Scope("t", "u")).jobs_swept == 2

    async def run() -> None:
        async with AsyncMemory(url, embedder="hashing", background=False, buffer=buffer) as amem:
            store = amem.store
            assert isinstance(store, AsyncStore), (kind, store)
            await store.enqueue(_jobs("async"))
            assert await store.sweep_done_jobs(before, 1) == 1
            assert await store.sweep_done_jobs(before) == 1
            report = await amem.maintain(Scope("t", "u"))
            assert report.jobs_swept == 0  # nothing left that old

    asyncio.run(run())
