"""Measure what the PostgreSQL trigger of the index of readers costs writes of shared
records (not a test): 2,000 records of 50 users, each shared with 3 readers of 200
(inserted by batches of 1,000, each row's readers new to the index: schema step 21 takes a
shared advisory lock per new row), then 300 ``set_access`` calls giving a record a
reader it never had. Three rounds, a fresh schema each.

    PYTHONPATH=src:tests python tests/purge28/measure_shared_writes.py
"""

from __future__ import annotations

import time
from dataclasses import replace

from memstrata import Memory, Scope
from memstrata.records import AccessControl, Visibility
from servers import postgres
from store.conftest import Maker


def main() -> None:
    server = postgres()
    for rnd in range(3):
        with Memory(server.url(), embedder="hashing", background=False) as mem:
            maker = Maker()
            writes = []
            for i in range(2000):
                r = maker.record(f"note {i}", tenant="acme", user=f"u{i % 50}")
                readers = tuple(f"r{(i * 7 + k) % 200}" for k in range(3))
                r = replace(r, access=AccessControl(Visibility.SHARED, readers))
                writes.append(maker.write(r, vector=False))
            t = time.perf_counter()
            for i in range(0, 2000, 1000):
                mem.store.insert(writes[i : i + 1000])
            inserted = time.perf_counter() - t
            t = time.perf_counter()
            for w in writes[:300]:
                r = w.record
                mem.set_access(
                    Scope("acme", r.user), r.id, allowed_users=[*r.access.allowed_users, "new"]
                )
            shared = time.perf_counter() - t
            print(f"round {rnd}: insert 2000 shared {inserted:.3f} s, set_access {shared:.3f} s")


if __name__ == "__main__":
    main()
