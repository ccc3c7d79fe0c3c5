"""A PostgreSQL claim leases at most ``limit`` jobs, whatever plan the server picks (pg34).

The claim was ``UPDATE jobs ... WHERE id IN (SELECT ... LIMIT n FOR UPDATE SKIP LOCKED)``,
the shape that let the done-jobs sweep delete 3 of 3 at ``limit`` 1 (session 33): the
planner may join the sub-select as the inner side of a semi-join and run it again per row,
each run skipping the rows the statement has just updated (its own locks) and taking the
next, so nothing held the claim to its limit. Now the batch is a ``MATERIALIZED`` CTE,
chosen once. The store URL's ``options`` turn off the planner's other joins (as a server's
statistics, or their absence, may), which is the plan that took every open job: before the
fix, a claim at ``limit`` 1 leased all 8 of the user's jobs (both tests fail)."""

from __future__ import annotations

import random
import threading
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from memstrata import Memory
from memstrata.jobs import Job
from servers import PgServer

NOW = datetime.now(UTC)
# Each is a plan the server may pick by itself (its statistics decide); together they
# leave the semi-join that runs the sub-select once per row of ``jobs``.
NO_OTHER_PLAN = " ".join(
    f"-c {s}=off"
    for s in ("enable_hashagg", "enable_hashjoin", "enable_mergejoin", "enable_material",
              "enable_sort")
)  # fmt: skip


def _jobs(users: int, each: int) -> list[Job]:
    return [
        Job(
            id=f"j-{u}-{i:03d}",
            kind="k",
            tenant="t",
            user=f"u{u}",
            payload={},
            created_at=NOW - timedelta(seconds=1000 - i),
            run_after=NOW - timedelta(seconds=1000 - i),
        )
        for u in range(users)
        for i in range(each)
    ]


@pytest.fixture(params=["default plans", "the semi-join"])
def url(request: pytest.FixtureRequest, pg_server: PgServer) -> object:
    schema = "t_" + uuid.uuid4().hex[:16]
    options = {"options": NO_OTHER_PLAN} if request.param == "the semi-join" else {}
    yield pg_server.url(schema, **options)
    pg_server.drop(schema)


def test_a_claim_takes_at_most_its_limit(url: str) -> None:
    with Memory(url, embedder="hashing", background=False) as mem:
        store = mem.store
        store.enqueue(_jobs(1, 8))
        taken: list[str] = []
        for limit in (1, 2, 3, 1, 3):
            got = store.claim_jobs(NOW, limit=limit, lease_seconds=60)
            assert len(got) == min(limit, 8 - len(taken)), (limit, [j.id for j in got])
            # the oldest first, none taken before
            assert [j.id for j in got] == [
                f"j-0-{i:03d}" for i in range(len(taken), len(taken) + len(got))
            ]
            taken += [j.id for j in got]
            for j in got:
                store.finish_job(j.id, j.lease_token)
        assert len(taken) == 8 and len(set(taken)) == 8


def test_concurrent_claimers_never_exceed_their_limit(url: str) -> None:
    """Four claimers on their own threads (one store, its pool of connections), 6 users of
    15 jobs, each claim at a random limit of 1 to 3, until no job is left: no claim over its
    limit, no job claimed twice, every job claimed."""
    with Memory(url, embedder="hashing", background=False) as mem:
        store = mem.store
        store.enqueue(_jobs(6, 15))
        claims: list[tuple[int, list[str]]] = []
        lock = threading.Lock()
        errors: list[BaseException] = []

        def claimer(seed: int) -> None:
            rng = random.Random(seed)
            idle = 0
            try:
                while idle < 20:
                    limit = rng.randint(1, 3)
                    got = store.claim_jobs(NOW, limit=limit, lease_seconds=60)
                    with lock:
                        claims.append((limit, [j.id for j in got]))
                    idle = 0 if got else idle + 1
                    for j in got:
                        store.finish_job(j.id, j.lease_token)
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=claimer, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        assert not errors, errors
        over = [(limit, ids) for limit, ids in claims if len(ids) > limit]
        assert not over, over[:5]
        ids = [i for _, got in claims for i in got]
        assert len(ids) == len(set(ids)), "a job was claimed twice"
        assert set(ids) == {j.id for j in _jobs(6, 15)}
        assert store.count_open_jobs() == 0
