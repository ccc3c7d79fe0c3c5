"""Several processes on one PostgreSQL store: optimistic locking loses no update.

Eight writer processes increment counters held in the content of a few shared records,
each with read → ``replace(expected_version=...)`` → retry on ``ConflictError``. Every
acknowledged increment must be in the final value and each version must be exactly its
predecessor plus one (no stale write accepted). ``MEMSTRATA_HEAVY=1`` runs a larger load.
"""

from __future__ import annotations

import multiprocessing
import os
import random
from dataclasses import replace

from memstrata.errors import ConflictError
from memstrata.scope import Scope
from memstrata.search.tokenize import tokenize
from memstrata.store import RecordWrite, open_store
from store.conftest import Maker

ME = Scope("t1", "u1")
WRITERS = 8
RECORDS = 4
INCREMENTS = 200 if os.environ.get("MEMSTRATA_HEAVY") == "1" else 25


def _writer(url: str, seed: int, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    store = open_store(url)
    rng = random.Random(seed)
    done = {f"c{i}": 0 for i in range(RECORDS)}
    conflicts = 0
    try:
        for _ in range(INCREMENTS):
            rid = f"c{rng.randrange(RECORDS)}"
            while True:
                cur = store.get(ME, rid)
                text = str(int(cur.content.raw) + 1)
                new = replace(cur, content=replace(cur.content, raw=text), version=cur.version + 1)
                try:
                    store.replace(
                        ME,
                        RecordWrite(new, None, tuple(tokenize(text))),
                        expected_version=cur.version,
                    )
                except ConflictError:
                    conflicts += 1
                    continue
                done[rid] += 1
                break
    finally:
        store.close()
    out.put((done, conflicts))


def test_eight_writer_processes_lose_no_update(pg_url: str) -> None:
    store = open_store(pg_url)
    maker = Maker()
    store.insert([maker.write(maker.record("0", id=f"c{i}")) for i in range(RECORDS)])
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(pg_url, n, out)) for n in range(WRITERS)]
    for p in procs:
        p.start()
    results = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    acknowledged = {f"c{i}": sum(r[0][f"c{i}"] for r in results) for i in range(RECORDS)}
    assert sum(acknowledged.values()) == WRITERS * INCREMENTS
    assert sum(r[1] for r in results) > 0  # the writers really raced
    try:
        for rid, n in acknowledged.items():
            assert int(store.get(ME, rid).content.raw) == n  # 0 lost updates
            history = store.history(ME, rid)
            assert [h.version for h in history] == list(range(1, n + 2))
            assert [int(h.content.raw) for h in history] == list(range(n + 1))  # 0 stale
    finally:
        store.close()
