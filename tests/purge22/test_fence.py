"""The fence at the store (jobs.Fence): a job's write transaction checks its claim inside
the transaction, and a purge deletes (whole user) or takes back (some records) the user's
claims in its own, with real concurrency: threads on two connections of one store
(PostgreSQL: the purge's ``DELETE``/``UPDATE`` of the job row waits for the write holding
it ``FOR SHARE``; SQLite: the write lock).

A write under way when the purge comes is waited for and then purged with the rest; a write
after it is refused (``JobRevokedError``) with nothing stored, the cache entries the job
embedded included. Without the fence (before session 22) the write under way committed
after the purge's ``DELETE`` of the records and stayed."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memstrata.errors import NotFoundError
from memstrata.filters import Filters
from memstrata.jobs import Fence, Job, JobRevokedError, JobStatus, fenced
from memstrata.scope import Scope
from memstrata.store import Store
from store.conftest import T0, Maker, make_store

KINDS = ("sqlite-file", "postgresql", "postgresql+redis")
SCOPE = Scope("t1", "u1")


@pytest.fixture
def maker() -> Maker:
    return Maker()


@pytest.fixture(params=KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s = make_store(request.param, tmp_path)
    yield s
    s.close()


def _claimed(store: Store) -> Job:
    store.enqueue(
        [Job(id="j1", kind="k", tenant="t1", user="u1", payload={}, created_at=T0, run_after=T0)]
    )
    (job,) = store.claim_jobs(T0, limit=5, lease_seconds=600)
    return job


class _Revoked:
    def __init__(self) -> None:
        self.told = 0

    def __call__(self) -> None:
        self.told += 1


def _fence(job: Job, told: _Revoked | None = None) -> Fence:
    assert job.lease_token is not None
    return Fence(job.id, job.lease_token, told or _Revoked())


def _held_write(store: Store, fence: Fence, write: Any) -> tuple[threading.Thread, threading.Event]:
    """A job's write transaction, open (its claim checked, its insert made) until released."""
    inside, release = threading.Event(), threading.Event()

    def run() -> None:
        with fenced(fence), store.transaction() as tx:
            tx.insert([write])
            tx.get(SCOPE, write.record.id)  # the queued insert runs now
            inside.set()
            assert release.wait(30)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert inside.wait(30)
    return thread, release


def _purge_waits_for(thread: threading.Thread, release: threading.Event, purge: Any) -> Any:
    """Start ``purge`` while the write is open: it must wait for it; then let the write
    commit and return the purge's report."""
    out: dict[str, Any] = {}
    purging = threading.Thread(target=lambda: out.setdefault("report", purge()), daemon=True)
    purging.start()
    purging.join(0.5)
    assert purging.is_alive(), "the purge did not wait for the job's write under way"
    release.set()
    thread.join(30)
    purging.join(30)
    assert not purging.is_alive()
    return out["report"]


def test_a_write_under_way_is_waited_for_and_purged_with_the_user(
    store: Store, maker: Maker
) -> None:
    job = _claimed(store)
    derived = maker.write(text="location: Lisbon, Rua Zambujeira")
    thread, release = _held_write(store, _fence(job), derived)
    report = _purge_waits_for(thread, release, lambda: store.purge_user("t1", "u1"))
    assert report.remaining == 0
    with pytest.raises(NotFoundError):
        store.get(SCOPE, derived.record.id)


def test_a_write_after_the_users_purge_is_refused_and_stores_nothing(
    store: Store, maker: Maker
) -> None:
    job = _claimed(store)
    told = _Revoked()
    fence = _fence(job, told)
    with fenced(fence):  # the job embedded something before the purge: buffered for it
        store.cache_vectors(SCOPE, "test", {"k-zambujeira": np.ones(8, dtype=np.float32)})
    store.purge_user("t1", "u1")
    derived = maker.write(text="location: Lisbon, Rua Zambujeira")
    with pytest.raises(JobRevokedError), fenced(fence), store.transaction() as tx:
        tx.insert([derived])
    assert told.told == 1 and fence.carried == {}
    store.flush_counters()
    with pytest.raises(NotFoundError):
        store.get(SCOPE, derived.record.id)
    assert store.cached_vectors(SCOPE, "test", ["k-zambujeira"]) == {}
    assert store.count_open_jobs(tenant="t1", user="u1") == 0


def test_a_jobs_cache_entries_are_written_with_its_write_under_its_claim(
    store: Store, maker: Maker
) -> None:
    job = _claimed(store)
    fence = _fence(job)
    with fenced(fence):
        store.cache_vectors(SCOPE, "test", {"k1": np.ones(8, dtype=np.float32)})
        assert set(store.cached_vectors(SCOPE, "test", ["k1"])) == {"k1"}  # its own reads
    store.flush_counters()  # not written by another transaction
    assert store.cached_vectors(SCOPE, "test", ["k1"]) == {}
    with fenced(fence), store.transaction() as tx:
        tx.insert([maker.write(text="a derived note")])
    assert set(store.cached_vectors(SCOPE, "test", ["k1"])) == {"k1"}
    assert fence.carried == {}


def test_a_records_purge_takes_back_the_users_claims_after_their_write_under_way(
    store: Store, maker: Maker
) -> None:
    source = maker.write(text="I live in Lisbon, on Rua Zambujeira")
    store.insert([source])
    job = _claimed(store)
    fence = _fence(job)
    derived = maker.write(text="location: Lisbon")
    thread, release = _held_write(store, fence, derived)
    report = _purge_waits_for(thread, release, lambda: store.purge(SCOPE, [source.record.id]))
    assert report.records == 1
    assert store.get(SCOPE, derived.record.id).text == "location: Lisbon"  # in: re-derived later
    (back,) = store.list_jobs("t1", "u1")
    assert (back.status, back.lease_token, back.attempts) == (JobStatus.PENDING, None, 0)
    with pytest.raises(JobRevokedError), fenced(fence), store.transaction() as tx:
        tx.insert([maker.write(text="location: Lisbon again")])
    (again,) = store.claim_jobs(T0, limit=5, lease_seconds=600)  # runs again, on what is left
    assert again.id == job.id and again.attempts == 1


def test_a_purge_made_by_the_job_itself_keeps_its_own_claim(store: Store, maker: Maker) -> None:
    source = maker.write(text="an old summary")
    store.insert([source])
    job = _claimed(store)
    fence = _fence(job)
    with fenced(fence):
        store.purge(SCOPE, [source.record.id])
        with store.transaction() as tx:
            tx.insert([maker.write(text="the new summary")])
    (held,) = store.list_jobs("t1", "u1")
    assert held.status is JobStatus.RUNNING and held.lease_token == job.lease_token


def test_writes_outside_a_job_are_not_fenced(store: Store, maker: Maker) -> None:
    """Only a job's writes check a claim: the user's own write after their purge (they came
    back) is stored, as is the write of a thread that runs no job beside one that does."""
    job = _claimed(store)
    store.purge_user("t1", "u1")
    mine = maker.write(text="written after the purge, by the user")
    store.insert([mine])
    with fenced(_fence(job)):
        beside = threading.Thread(target=lambda: store.insert([maker.write(text="beside")]))
        beside.start()
        beside.join(30)
    assert [r.text for r in store.get_many(SCOPE, [mine.record.id])] == [mine.record.text]
    assert store.count(SCOPE, Filters()) == 2


@pytest.mark.parametrize("whole", [True, False], ids=["purge_user", "purge_ids"])
def test_a_job_writing_in_a_loop_never_outlives_the_purge(
    store: Store, maker: Maker, whole: bool
) -> None:
    """Real concurrency, many interleavings: a job writes derived records one transaction
    after another while the purge comes at a random moment. Whatever it wrote before is
    purged (a whole user) or still there to be derived again (some records); nothing it
    wrote after the purge's commit exists, and nothing deadlocks."""
    import random

    rng = random.Random(22)
    for round_ in range(8):
        source = maker.write(text=f"source turn {round_}")
        store.insert([source])
        store.enqueue(
            [
                Job(
                    id=f"j{round_}",
                    kind="k",
                    tenant="t1",
                    user="u1",
                    payload={},
                    created_at=T0,
                    run_after=T0,
                )
            ]
        )
        (job,) = store.claim_jobs(T0, limit=1, lease_seconds=600)
        fence = _fence(job)
        written: list[str] = []
        refused = threading.Event()

        def write_until_refused(
            fence: Fence = fence, written: list[str] = written, refused: Any = refused
        ) -> None:
            try:
                while True:
                    w = maker.write(text="derived from the source")
                    with fenced(fence), store.transaction() as tx:
                        tx.insert([w])
                    written.append(w.record.id)
            except JobRevokedError:
                refused.set()

        writer = threading.Thread(target=write_until_refused, daemon=True)
        writer.start()
        threading.Event().wait(rng.uniform(0.0, 0.05))
        if whole:
            report = store.purge_user("t1", "u1")
            assert report.remaining == 0
        else:
            store.purge(SCOPE, [source.record.id])
        writer.join(30)
        assert refused.is_set() and not writer.is_alive()
        left = {r.id for r in store.get_many(SCOPE, written)}
        if whole:
            assert left == set(), f"round {round_}: {len(left)} written under the claim stayed"
        else:  # every write the job made before the purge is there (to be derived again)
            assert left == set(written)
            (back,) = [j for j in store.list_jobs("t1", "u1") if j.id == job.id]
            assert back.status is JobStatus.PENDING and back.lease_token is None
            for j in store.list_jobs("t1", "u1"):  # next round claims only its own job
                if j.status is JobStatus.PENDING:
                    store.finish_job(j.id)
