"""Run by hand: ``PYTHONPATH=src:tests python tests/mem31b/measure_owner.py``.

One memory:// store of 10 users (the owner with 100 / 1,000 / 10,000 notes, nine others
with 1,000 each, every note with a 64-dimension vector): an add by the owner then the
owner's lexical and vector search, alternated 50 times (tests/mem31b/cost.py). Prints the
entries of the store walked per step, the time per step (median and total of the 50), and
one search's time with no write before it (median of 20)."""

from __future__ import annotations

import statistics
import time

from mem31b.cost import add_then_search, filled, search


def main() -> None:
    for n in (100, 1000, 10_000):
        store = filled(n)
        rows, times = [], []
        for k in range(50):
            t = time.perf_counter()
            rows.append(add_then_search(store, 20_000_000 + k))
            times.append(time.perf_counter() - t)
        alone_times = []
        for k in range(20):
            t = time.perf_counter()
            search(store, k)
            alone_times.append(time.perf_counter() - t)
        alone = statistics.median(alone_times)
        print(
            f"{n:>6} notes of the owner (+9,000 others): entries walked per add+search "
            f"{statistics.median(rows):>7.0f}, time {statistics.median(times) * 1000:7.2f} ms "
            f"(50 steps {sum(times):6.2f} s); a search alone {alone * 1000:6.2f} ms"
        )


if __name__ == "__main__":
    main()
