"""What the count costs a PostgreSQL write transaction, three ways — docs/measurements.md,
session 33, quota33. Not a test: run it by hand (this tree's source).

    PYTHONPATH=src python tests/quota33/measure_take.py [n] [rounds]

On one store (the suite's pgserver, a fresh schema), interleaved: a bare write
transaction (one upsert of a ``meta`` row); the same carrying a two-counter count
(``counted_writes.carried``: the upsert before its ``COMMIT``, session 33);
``take_counters`` of the same two unlimited counters, then the bare transaction (the take
of its own, session 32). Median µs of ``n`` each per round, after 100 unmeasured."""

from __future__ import annotations

import statistics
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from memstrata.quota_types import day_take  # noqa: E402
from memstrata.store.counted_writes import Counted, carried  # noqa: E402
from memstrata.store.postgres.store import PostgresStore  # noqa: E402
from servers import postgres  # noqa: E402


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    server = postgres()
    schema = "m_" + uuid.uuid4().hex[:12]
    store = PostgresStore(server.url(schema))
    now = datetime.now(UTC)
    takes = (
        day_take("emb", "acme", "alice", now, 1, None),
        day_take("emb", "acme", None, now, 1, None),
    )

    def bare() -> None:  # a write: its COMMIT flushes the WAL, as a record's does
        with store._tx() as c:
            c.execute(
                "INSERT INTO meta (key, value) VALUES ('bench:row', '1') "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            )

    def with_the_write() -> None:
        with carried(Counted(takes, store.counts_home)):  # type: ignore[arg-type]
            bare()

    def own_take() -> None:
        store.take_counters(list(takes))
        bare()

    ways = {"bare": bare, "carried": with_the_write, "own take": own_take}
    try:
        for r in range(rounds):
            for _ in range(100):
                for f in ways.values():
                    f()
            took: dict[str, list[float]] = {k: [] for k in ways}
            for _ in range(n):
                for name, f in ways.items():
                    t = time.perf_counter()
                    f()
                    took[name].append(time.perf_counter() - t)
            print(
                f"round {r}: "
                + ", ".join(f"{k} {statistics.median(v) * 1e6:,.0f} µs" for k, v in took.items()),
                flush=True,
            )
    finally:
        store.close()
        server.drop(schema)


if __name__ == "__main__":
    main()
