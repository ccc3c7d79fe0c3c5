"""Run by hand: ``PYTHONPATH=src:tests python tests/mem31/measure_shared.py``.

For an owner of 100 / 1,000 / 10,000 notes on memory:// (one in ten shared, then about 30
shared whatever the number): the rows of the store walked and the time of one add by the
owner (public, then private) followed by each caller's page, count and lexical search
(tests/mem31/shared_cost.py). Median of 7."""

from __future__ import annotations

import statistics
import time

from mem31.shared_cost import filled, one_add_then_reads


def main() -> None:
    for label, every in (("1 in 10 shared", 10), ("~30 shared", 0)):
        for n in (100, 1000, 10_000):
            store = filled(n, every or n // 30)
            for shared in (True, False):
                rows, times = [], []
                for k in range(7):
                    t = time.perf_counter()
                    rows.append(one_add_then_reads(store, 10_000_000 + k * 2 + shared, shared))
                    times.append(time.perf_counter() - t)
                kind = "public" if shared else "private"
                print(
                    f"{label}, {n:>6} notes, add {kind:7}: rows walked "
                    f"{statistics.median(rows):>7.0f}, time "
                    f"{statistics.median(times) * 1000:8.2f} ms"
                )


if __name__ == "__main__":
    main()
