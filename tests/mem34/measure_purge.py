"""The SQLite purge by ids before/after mem34's removal of archived versions' link rows
(run by hand: ``PYTHONPATH=<src>:. python -m tests.mem34.measure_purge N``, with main's
``src`` exported for before): ``N`` notes of one user, each with three versions naming
other records, then 20 purges of one record each (median) and one of 50 records."""

from __future__ import annotations

import statistics
import sys
import tempfile
import timeit
from pathlib import Path

from tests.purge31b.test_links_equal_scan import _build

from memstrata import Memory


def main(n: int) -> None:
    v = {
        "sources": [1, 2],
        "superseded_by": None,
        "links": {"replaces": 3},
        "members": [],
        "cluster_id": None,
        "dropped": None,
        "related": [4],
    }
    empty = {**v, "sources": [], "links": {}, "related": []}
    specs = [{"type": "note", "versions": [v, {**v, "sources": [5]}, empty]} for _ in range(n)]
    with tempfile.TemporaryDirectory() as d:
        mem = Memory(f"sqlite:///{Path(d) / 'm.db'}")
        owner, ids = _build(mem, specs, "ann")
        left = iter(ids[10:])
        times = timeit.repeat(lambda: mem.purge(owner, [next(left)]), number=1, repeat=20)
        many = [next(left) for _ in range(50)]
        t = timeit.default_timer()
        mem.purge(owner, many)
        fifty = timeit.default_timer() - t
        mem.close()
    print(
        f"{n} records: purge of one, median of 20: {statistics.median(times) * 1000:.2f} ms; "
        f"of 50 at once: {fifty * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
