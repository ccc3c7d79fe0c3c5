"""The cost of ``Memory.add`` on PostgreSQL with quotas in use, before and after quota33
(the count in the write's own transaction) — docs/measurements.md, session 33, quota33.
Not a test: run it by hand.

    PYTHONPATH=src python tests/quota33/measure_add.py BEFORE_SRC AFTER_SRC [rounds] [adds]

Three configurations, each a fresh process on a fresh schema of one server (the store's
``quotas:in_use`` flag set first): ``plain`` a ``Memory`` without quotas (its count has no
limit), ``records`` one with ``Quota(max_records=...)`` only (no embeddings limit), ``daily``
one with ``embeddings_per_day`` (its take stays before the embedding: the control). Rounds
alternate the trees' order; per round the median of ``adds`` calls of ``add`` after 20
unmeasured; then the median of the rounds' medians."""

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
from memstrata.quotas import Quota, Quotas
url, adds, config = sys.argv[1], int(sys.argv[2]), sys.argv[3]
quota = {"plain": None, "records": Quota(max_records=10**9),
         "daily": Quota(embeddings_per_day=10**9)}[config]
flag = Memory(url, embedder="hashing", background=False,
              quotas=Quotas(per_user=Quota(embeddings_per_day=10**9)))
flag.add(Scope("acme", "bob"), "sets the quotas:in_use flag")
flag.close()
mem = Memory(url, embedder="hashing", background=False,
             quotas=None if quota is None else Quotas(per_user=quota))
scope = Scope("acme", "alice", session="s1")
for i in range(20):
    mem.add(scope, f"warm up note {i} about glazes and kilns")
took = []
for i in range(adds):
    t = time.perf_counter()
    mem.add(scope, f"note {i}: the glaze number {i} was cobalt blue at cone {i % 12}")
    took.append(time.perf_counter() - t)
mem.close()
print(statistics.median(took) * 1e3)
"""


def main() -> None:
    before, after = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    adds = sys.argv[4] if len(sys.argv) > 4 else "150"
    server = postgres()
    out: dict[tuple[str, str], list[float]] = {}
    for r in range(rounds):
        for config in ("plain", "records", "daily"):
            trees = (("before", before), ("after", after))[:: 1 if r % 2 == 0 else -1]
            for name, src in trees:
                schema = "m_" + uuid.uuid4().hex[:12]
                done = subprocess.run(
                    [sys.executable, "-c", ROUND, server.url(schema), adds, config],
                    env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
                    capture_output=True,
                    text=True,
                    check=True,
                )
                server.drop(schema)
                ms = float(done.stdout.split()[-1])
                out.setdefault((config, name), []).append(ms)
                print(f"round {r} {config:7} {name:6} {ms:7.2f} ms", flush=True)
    for config in ("plain", "records", "daily"):
        b, a = out[(config, "before")], out[(config, "after")]
        print(
            f"{config:7} before {statistics.median(b):6.2f} ms  after {statistics.median(a):6.2f}"
            f" ms  (rounds: {' '.join(f'{x:.1f}' for x in b)} | {' '.join(f'{x:.1f}' for x in a)})"
        )


if __name__ == "__main__":
    main()
