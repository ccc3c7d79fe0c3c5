"""A PostgreSQL dump is the store at one moment: writes made while it pages (a new record,
an update of a record it has not reached yet, a job, an audit event) are not in it, and
what it holds is whole. Before, each page was read in its own statements, so a later page
held what was written after the dump began — and a row whose seq was taken before a
committed neighbour's but committed after the dump passed it was skipped for good."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing

import numpy as np
import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.audit import AuditEvent
from memstrata.jobs import Job
from memstrata.store.types import CacheEntry

from .conftest import NOW

ALICE = Scope("acme", "alice", session="s1")


@pytest.fixture
def mem(pg_url: str) -> Iterator[Memory]:
    m = Memory(pg_url, embedder="hashing", clock=FixedClock(NOW), background=False)
    yield m
    m.close()


def test_records_written_during_a_dump_are_not_in_it(mem: Memory) -> None:
    first = [mem.add(ALICE, f"fact number {i}") for i in range(6)]
    last = first[-1]
    with closing(mem.store.dump_records(batch_size=2)) as dumps:
        seen = list(next(dumps))
        # while the dump is between pages: a new record, and a new version of the last one
        mem.add(ALICE, "written while the dump ran")
        mem.update(ALICE, last.id, content="changed while the dump ran", expected_version=1)
        for batch in dumps:
            seen.extend(batch)

    assert [d.record.id for d in seen] == [r.id for r in first]
    dumped_last = seen[-1]
    assert [v.version for v in dumped_last.versions] == [1]
    assert dumped_last.record.content == last.content
    # and the store itself has both writes: the next dump holds them
    again = [d for batch in mem.store.dump_records(batch_size=2) for d in batch]
    assert len(again) == 7
    assert [v.version for v in again[5].versions] == [1, 2]


def _job(job_id: str) -> Job:
    return Job(
        id=job_id,
        kind="refine_importance",
        tenant="acme",
        user="alice",
        payload={},
        created_at=NOW,
        run_after=NOW,
    )


def test_jobs_cache_and_audit_written_during_a_dump_are_not_in_it(mem: Memory) -> None:
    store = mem.store
    for i in range(4):
        mem.add(ALICE, f"note {i}")
        store.append_audit(
            [AuditEvent(id=f"ev{i}", tenant="acme", user="alice", actor="t", action="note", at=NOW)]
        )
    store.enqueue([_job(f"job-{i}") for i in range(3)])
    jobs_before = [j.id for batch in store.dump_jobs(500) for j in batch]
    events = store.dump_audit(batch_size=1)
    cache = store.dump_cache(batch_size=1)
    jobs = store.dump_jobs(batch_size=1)
    with closing(events), closing(cache), closing(jobs):
        _write_between_pages(mem, events, cache, jobs, jobs_before)


def _write_between_pages(
    mem: Memory,
    events: Iterator[list[AuditEvent]],
    cache: Iterator[list[CacheEntry]],
    jobs: Iterator[list[Job]],
    jobs_before: list[str],
) -> None:
    store = mem.store
    got_events = [e.id for e in next(events)]
    got_cache = list(next(cache))
    got_jobs = [j.id for j in next(jobs)]

    store.append_audit(
        [AuditEvent(id="late", tenant="acme", user="alice", actor="t", action="note", at=NOW)]
    )
    store.enqueue([_job("late-job")])
    store.cache_vectors(
        ALICE, mem.embedder.model_id, {"late-entry": np.ones(mem.embedder.dims, dtype=np.float32)}
    )

    got_events += [e.id for batch in events for e in batch]
    got_cache += [c for batch in cache for c in batch]
    got_jobs += [j.id for batch in jobs for j in batch]
    assert "late" not in got_events and {f"ev{i}" for i in range(4)} <= set(got_events)
    assert sorted(got_jobs) == sorted(jobs_before)
    assert len(got_cache) == len([c for b in store.dump_cache(500) for c in b]) - 1
