"""What the index of citations adds to writes on SQLite: the VM steps (a progress handler
on every connection of the store) of ``add_messages`` of ``turns`` turns in calls of 500
and of the ``flush`` after each call (the offline heuristic provider), and the rows of the
index (``rr``'s citation rows) they leave — docs/measurements.md, session 31, purge31. Not
a test: run it by hand, before and after (VM steps do not depend on the machine's load).

    PYTHONPATH=src python tests/purge31/measure_write.py [turns ...]
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure_purge import BOB, turn, vm_steps  # type: ignore[import-not-found]  # noqa: E402

from memstrata import Memory  # noqa: E402


def run(base: Path, turns: int) -> str:
    path = base / f"w{turns}.db"
    add = flush = 0
    took = [0.0, 0.0]
    with Memory(f"sqlite:///{path}", embedder="hashing", llm="heuristic", background=False) as mem:
        for start in range(0, turns, 500):
            steps, off = vm_steps(mem.store)
            t0 = time.perf_counter()
            mem.add_messages(BOB, [turn(i) for i in range(start, min(turns, start + 500))])
            took[0] += time.perf_counter() - t0
            off()
            add += steps["vm"]
            steps, off = vm_steps(mem.store)
            t0 = time.perf_counter()
            mem.flush(BOB)
            took[1] += time.perf_counter() - t0
            off()
            flush += steps["vm"]
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT count(*) FROM rr WHERE substr(r, 1, 4) = CAST('src:' AS BLOB)"
        ).fetchone()[0]
    finally:
        conn.close()
    return (
        f"sqlite turns={turns}: add_messages {add:,} VM steps ({took[0] * 1e3:.0f} ms), "
        f"flush {flush:,} VM steps ({took[1] * 1e3:.0f} ms); citation rows {rows:,}; "
        f"file {path.stat().st_size:,} bytes"
    )


if __name__ == "__main__":
    base = Path(tempfile.mkdtemp(prefix="memstrata-purge31w-"))
    for n in [int(a) for a in sys.argv[1:]] or [1000]:
        print(run(base, n), flush=True)
