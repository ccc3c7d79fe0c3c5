"""Measure what the PostgreSQL trigger of the index of readers costs a write (not a test):
inserts of unshared records (COPY batches of 1,000; pipelined batches of 20) and
``replace`` calls, with the triggers enabled and disabled, alternating, in one schema.

    PYTHONPATH=src:tests python tests/purgeidx27/measure_trigger.py
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from memstrata import Memory, Scope
from memstrata.store import RecordWrite
from servers import postgres
from store.conftest import Maker


def main() -> None:
    server = postgres()
    with Memory(server.url(), embedder="hashing", background=False) as mem:
        store: Any = mem.store
        maker = Maker()
        results: dict[tuple[str, bool], list[float]] = {}
        for rnd in range(3):
            for on in (True, False):
                verb = "ENABLE" if on else "DISABLE"
                with store._pool.connection() as conn:
                    for t in ("record_readers_insert", "record_readers_update"):
                        conn.execute(f"ALTER TABLE records {verb} TRIGGER {t}")
                for size, label in ((1000, "copy 1000"), (20, "insert 20")):
                    writes = [
                        maker.write(maker.record(tenant="acme", user=f"u{rnd}"), vector=False)
                        for _ in range(2000)
                    ]
                    t0 = time.perf_counter()
                    for i in range(0, len(writes), size):
                        store.insert(writes[i : i + size])
                    results.setdefault((label, on), []).append(time.perf_counter() - t0)
                    if size == 20:
                        t0 = time.perf_counter()
                        for w in writes[:300]:
                            r = w.record
                            new = replace(r, version=r.version + 1, importance=0.3)
                            store.replace(
                                Scope("acme", r.user),
                                RecordWrite(new, None, w.terms),
                                expected_version=r.version,
                            )
                        results.setdefault(("replace x300", on), []).append(
                            time.perf_counter() - t0
                        )
        for (label, on), secs in sorted(results.items()):
            print(
                f"{label:14} trigger {'on ' if on else 'off'}: "
                + ", ".join(f"{s:.3f}" for s in secs)
            )


if __name__ == "__main__":
    main()
