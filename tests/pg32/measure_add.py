"""The cost of ``Memory.add`` on PostgreSQL before and after pg32's schema check (each write
transaction's BEGIN carries a shared lock of the schema and the version read) — docs/
measurements.md, session 32, pg32. Not a test: run it by hand.

    PYTHONPATH=src python tests/pg32/measure_add.py BEFORE_SRC AFTER_SRC [rounds] [adds]

Alternating rounds, each a fresh process on a fresh schema of one server: ``adds`` calls of
``add`` (hashing embedder, background=False) after 20 unmeasured; printed per round the
median time of one ``add`` and of one bare write transaction (``SELECT 1``) made between
two adds, then the median of the rounds' medians for each tree."""

from __future__ import annotations

import statistics
import subprocess
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from servers import postgres  # noqa: E402

ROUND = """
import statistics, sys, time
from memstrata import Memory, Scope
mem = Memory(sys.argv[1], embedder="hashing", background=False)
scope = Scope("acme", "alice", session="s1")
for i in range(20):
    mem.add(scope, f"warm up note {i} about glazes and kilns")
took, bare = [], []
for i in range(int(sys.argv[2])):
    t = time.perf_counter()
    mem.add(scope, f"note {i}: the glaze number {i} was cobalt blue at cone {i % 12}")
    took.append(time.perf_counter() - t)
    t = time.perf_counter()
    with mem._store._tx() as c:  # a write transaction of one statement
        c.execute("SELECT 1")
    bare.append(time.perf_counter() - t)
mem.close()
print(statistics.median(took) * 1e3, statistics.median(bare) * 1e3)
"""


def main() -> None:
    before, after = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    adds = sys.argv[4] if len(sys.argv) > 4 else "200"
    server = postgres()
    out: dict[str, list[float]] = {"before": [], "after": []}
    bare: dict[str, list[float]] = {"before": [], "after": []}
    for r in range(rounds):
        for name, src in (("before", before), ("after", after))[:: 1 if r % 2 == 0 else -1]:
            schema = "m_" + uuid.uuid4().hex[:12]
            done = subprocess.run(
                [sys.executable, "-c", ROUND, server.url(schema), adds],
                env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
                capture_output=True,
                text=True,
                check=True,
            )
            add, tx = (float(v) for v in done.stdout.split())
            out[name].append(add)
            bare[name].append(tx)
            server.drop(schema)
            print(r, name, f"add {add:.3f} ms, bare transaction {tx:.3f} ms", flush=True)
    for name in out:
        print(
            name,
            f"add: median of medians {statistics.median(out[name]):.3f} ms;",
            f"bare transaction: {statistics.median(bare[name]):.3f} ms",
        )


if __name__ == "__main__":
    main()
