"""Median acquire of SharedRateLimiter on the store's counters (ops30, docs/measurements.md):
50 keys x 200 one-second windows, max_keys=1; prints the rate rows kept."""

from __future__ import annotations

import statistics
import tempfile
import time

from memstrata.ratelimit import SharedRateLimiter
from memstrata.store import open_store


def run(url: str) -> None:
    store = open_store(url)
    now = [1_000_000.0]
    limiter = SharedRateLimiter(10.0, 10, fallback=store, clock=lambda: now[0], max_keys=1)
    times = []
    for _ in range(200):
        for k in range(50):
            t = time.perf_counter()
            limiter.acquire(f"key:{k}")
            times.append(time.perf_counter() - t)
        now[0] += 1.0
    rows = sum(1 for k in store.meta_items() if k.startswith("rate:"))  # type: ignore[attr-defined]
    print(url.split(":")[0], "rows", rows, "median us", round(statistics.median(times) * 1e6, 1))
    store.close()


if __name__ == "__main__":
    run(f"sqlite:///{tempfile.mkdtemp()}/r.db")
    run("memory://")
