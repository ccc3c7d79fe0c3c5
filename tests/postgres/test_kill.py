"""kill -9 on PostgreSQL: a writer killed mid-run loses no acknowledged write and leaves no
message without its ingest job; a worker killed mid-job has its jobs finished by the
others once its lease expires, with no job done twice at once. Sized for CI;
``MEMSTRATA_HEAVY=1`` runs 10,000 writes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from memstrata.filters import Filters
from memstrata.scope import Scope
from memstrata.store import open_store

HEAVY = os.environ.get("MEMSTRATA_HEAVY") == "1"
WRITES = 10_000 if HEAVY else 600
ME = Scope("t1", "u1", session="s1")

_WRITER = """
import sys
from memstrata import Memory, Scope
mem = Memory(sys.argv[1], embedder="hashing", background=False)
scope = Scope("t1", "u1", session="s1")
for n in range(int(sys.argv[2])):
    rec = mem.add_message(scope, "user", f"message number {n} about tea and rivers")
    print(rec.id, flush=True)  # acknowledged: add_message returned
"""


def test_a_killed_writer_loses_no_acknowledged_write(pg_url: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, pg_url, str(WRITES)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    acknowledged: list[str] = []
    kill_after = WRITES // 3
    for line in proc.stdout:
        acknowledged.append(line.strip())
        if len(acknowledged) >= kill_after:
            break
    time.sleep(0.05)  # let it be somewhere inside the next writes
    proc.send_signal(signal.SIGKILL)
    rest, _ = proc.communicate()
    acknowledged += [x for x in rest.split() if x]  # printed before the kill
    store = open_store(pg_url)
    try:
        stored = {
            r.id for r in store.list(ME.user_scope, Filters(include_deleted=True), limit=100_000)
        }
        assert set(acknowledged) <= stored  # 0 acknowledged writes lost
        jobs = store.list_jobs("t1", "u1")
        covered = {i for j in jobs if j.kind == "ingest" for i in j.payload["ids"]}
        assert stored <= covered  # no message without its ingest job
        assert len(acknowledged) >= kill_after
    finally:
        store.close()


_WORKER = """
import sys, time
from memstrata import Memory
from memstrata.worker import JobRunner
mem = Memory(sys.argv[1], embedder="hashing", background=False)

def announced(handler):
    def run(job):
        print("start", job.id, flush=True)  # from here on this worker holds the lease
        time.sleep(0.05)
        handler(job)
    return run

handlers = {kind: announced(h) for kind, h in mem.layers.handlers().items()}
runner = JobRunner(mem.store, handlers, mem.clock, lease_seconds=2.0)
idle = 0
while idle < 4:  # stop when nothing was claimable four polls in a row (leases expire)
    report = runner.run_pending(batch=1)
    if report.done or report.retried or report.failed:
        idle = 0
    else:
        idle += 1
        time.sleep(1.0)
mem.close()
"""


def test_a_killed_worker_s_jobs_finish_elsewhere_without_duplicates(pg_url: str) -> None:
    from memstrata import Memory

    users = [Scope("t1", f"u{n}", session="s1") for n in range(6)]
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        for round_ in range(8 if not HEAVY else 40):
            for scope in users:
                mem.add_messages(
                    scope,
                    [
                        {
                            "role": "user",
                            "content": f"I moved to Lisbon in "
                            f"{round_} and I like green tea number {k}",
                        }
                        for k in range(5)
                    ],
                )
    workers = [
        subprocess.Popen([sys.executable, "-c", _WORKER, pg_url], stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    victim = workers[0]
    assert victim.stdout is not None
    victim.stdout.readline()
    victim.stdout.readline()  # inside its second job, holding that job's lease
    victim.send_signal(signal.SIGKILL)
    victim.wait(30)
    victim.stdout.close()
    for w in workers[1:]:
        w.communicate(timeout=300)
        assert w.returncode == 0
    store = open_store(pg_url)
    try:
        every = [j for scope in users for j in store.list_jobs(scope.tenant, scope.user)]
        # The victim died holding a lease: a survivor claimed that job again after it ran out.
        assert any(j.attempts >= 2 for j in every)
        for scope in users:
            jobs = store.list_jobs(scope.tenant, scope.user)
            assert jobs and all(j.status.value == "done" for j in jobs), [
                (j.kind, j.status.value) for j in jobs
            ]
            derived = [
                r
                for r in store.list(scope.user_scope, Filters(), limit=100_000)
                if r.type.value != "message"
            ]
            keys = [(r.type.value, r.content_hash, tuple(sorted(r.source_ids))) for r in derived]
            assert len(keys) == len(set(keys))  # no derived record made twice
    finally:
        store.close()
