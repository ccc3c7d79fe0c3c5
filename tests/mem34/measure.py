"""Before/after timings of tests/mem34 (run by hand, from the worktree:
``PYTHONPATH=src:. python -m tests.mem34.measure audit|count [N]``); "before" is main
8341b8a's code (its ``audit_backends.py`` read from git and loaded beside today's; a
caller's count walked as main does, tests/mem34/oracle.py), on the same data in the same
process, runs alternated."""

from __future__ import annotations

import gc
import importlib.util
import statistics
import subprocess
import sys
import timeit
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from tests.mem33.test_audit_query import _event

from memstrata.audit_backends import InMemoryAudit
from memstrata.audit_types import AuditQuery

MAIN = "8341b8a"
RUNS = 10


def main_module(path: str, name: str) -> Any:
    """``path`` of main's ``src/memstrata`` loaded as ``memstrata.<name>`` (its relative
    imports read today's package)."""
    root = Path(__file__).resolve().parents[2]
    text = subprocess.run(
        ["git", "-C", str(root), "show", f"{MAIN}:src/memstrata/{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    package = ".".join(["memstrata", *path.split("/")[:-1]])
    spec = importlib.util.spec_from_loader(f"{package}.{name}", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__package__ = package
    sys.modules[spec.name] = module
    exec(compile(text, f"main:{path}", "exec"), module.__dict__)
    return module


def _median_ms(fn: Callable[[], Any], repeat: int = 20) -> float:
    return statistics.median(timeit.repeat(fn, number=1, repeat=repeat)) * 1000


def audit(n: int) -> None:
    """``n`` events of 100 users of tenant acme (mem33's data: two thirds ``set_access``,
    each naming one record), appended one by one (5 runs, alternated), then queries."""
    old_cls = main_module("audit_backends.py", "_main_audit_backends").InMemoryAudit
    events = [
        _event(i, "acme", f"u{i % 100}", f"u{i % 100}", action="set_access" if i % 3 else "add")
        for i in range(n)
    ]
    mine = [e for e in events if e.user == "u7"]
    queries = {
        "one record's events, no user": AuditQuery(record_id=mine[-1].record_ids[0]),
        "one record of u7's (user + record_id)": AuditQuery(
            user="u7", record_id=mine[5].record_ids[0]
        ),
        "a record no event names": AuditQuery(record_id="nothing"),
        "u7's oldest 50": AuditQuery(user="u7", limit=50),
    }
    logs: dict[str, Any] = {}
    appends: dict[str, list[float]] = {"before": [], "after": []}
    pair = [("before", old_cls), ("after", InMemoryAudit)]
    for run in range(RUNS):
        for name, cls in pair if run % 2 == 0 else pair[::-1]:  # each goes first in turn
            logs.pop(name, None)
            gc.collect()
            log: Any = cls(in_transactions=True)
            t = timeit.default_timer()
            for e in events:
                log.append_audit([e])
            appends[name].append((timeit.default_timer() - t) / n * 1e6)
            logs[name] = log
    for name, times in appends.items():
        print(
            f"{name}: append one by one, {RUNS} runs alternated: min {min(times):.2f} µs, "
            f"median {statistics.median(times):.2f} µs ({', '.join(f'{t:.2f}' for t in times)})"
        )
    for label, q in queries.items():
        got = [logs[k].query_audit("acme", q) for k in ("before", "after")]
        assert got[0] == got[1], label
        times = [
            _median_ms(partial(logs[k].query_audit, "acme", q), repeat=reps)
            for k, reps in (("before", 5), ("after", 20))
        ]
        print(f"{label}: {len(got[1])} events, before {times[0]:.3f} ms, after {times[1]:.4f} ms")


def _bob(n: int, lanes: Any) -> Any:
    """bob's ``n`` notes (importance 0.5, metadata ``{"project": "y", "from": "chat"}``,
    every other one superseded) and 1,000 facts (importance 0.9, ``{"project": "x",
    "from": "chat"}``), all shared with carol; carol and four other callers have listed
    once. ``lanes``: the ``lane_keys`` the callers' orders are kept with (main's or
    today's)."""
    from tests.mem32.test_cost import CAROL, _write

    from memstrata.filters import Filters
    from memstrata.records import RecordType
    from memstrata.scope import Scope
    from memstrata.store import memory_shared
    from memstrata.store.memory import InMemoryStore

    y, x = {"project": "y", "from": "chat"}, {"project": "x", "from": "chat"}
    store = InMemoryStore()
    store.insert(
        [
            _write(
                i,
                "bob",
                access=CAROL,
                importance=0.5,
                metadata=y,
                superseded_by="bob-x" if i % 2 else None,
            )
            for i in range(n)
        ]
    )
    store.insert(
        [
            _write(n + i, "bob", access=CAROL, type=RecordType.FACT, importance=0.9, metadata=x)
            for i in range(1_000)
        ]
    )
    with _lanes(memory_shared, lanes):
        for caller in ("carol", "dave", "erin", "frank", "gina"):
            store.list(Scope("t", "bob").as_caller(caller), Filters(), limit=10)
    return store


class _lanes:
    """``memory_shared.lane_keys`` swapped for ``keys`` while in the block."""

    def __init__(self, module: Any, keys: Any) -> None:
        self.module, self.keys = module, keys

    def __enter__(self) -> None:
        self.was = self.module.lane_keys
        self.module.lane_keys = self.keys

    def __exit__(self, *_: Any) -> None:
        self.module.lane_keys = self.was


def count(n: int) -> None:
    """carol's counts of :func:`_bob`'s records by importance, metadata and superseded
    (median of 20 after, 5 before: main's walk of her whole order, mem33's oracle)."""
    from tests.mem33.oracle import old_count

    from memstrata.filters import Filters
    from memstrata.scope import Scope
    from memstrata.store import memory_shared

    store = _bob(n, memory_shared.lane_keys)
    carol = Scope("t", "bob").as_caller("carol")

    def meta(spec: Any) -> Any:
        return Filters.parse({"metadata": spec}).metadata

    cases = {
        "min_importance 0.8": Filters(min_importance=0.8, include_superseded=True),
        "metadata project = x": Filters(metadata=meta({"project": "x"})),
        "metadata project in [x, z]": Filters(metadata=meta({"project": {"in": ["x", "z"]}})),
        "superseded left out (the default), no other filter": Filters(),
        "metadata from = chat (all match)": Filters(metadata=meta({"from": "chat"})),
    }
    for label, f in cases.items():
        got = store.count(carol, f)
        assert got == old_count(store, carol, f), label
        walked = store.walked
        store.count(carol, f)
        walked = store.walked - walked
        before = _median_ms(partial(old_count, store, carol, f), repeat=5)
        after = _median_ms(partial(store.count, carol, f))
        print(f"{label}: {got} ({walked} walked), before {before:.3f} ms, after {after:.4f} ms")


def write(n: int) -> None:
    """An insert of one note shared with carol (metadata of two keys) by bob of
    :func:`_bob`'s records (five callers' orders kept): two stores, one kept with main's
    lanes, one with today's, 50 inserts each in turn, 4 rounds (median of 200 each)."""
    from tests.mem32.test_cost import CAROL, _write

    from memstrata.store import memory_shared

    old_keys = main_module("store/memory_shared.py", "_main_memory_shared").lane_keys
    stores = {
        "before": (_bob(n, old_keys), old_keys),
        "after": (_bob(n, memory_shared.lane_keys), memory_shared.lane_keys),
    }
    times: dict[str, list[float]] = {"before": [], "after": []}
    k = n + 2_000
    meta = {"project": "z", "from": "chat"}
    for run in range(4):
        for name in ("before", "after") if run % 2 == 0 else ("after", "before"):
            store, keys = stores[name]
            with _lanes(memory_shared, keys):
                for _ in range(50):
                    w = _write(k, "bob", access=CAROL, session="s3", tags=("y",), metadata=meta)
                    k += 1
                    t = timeit.default_timer()
                    store.insert([w])
                    times[name].append(timeit.default_timer() - t)
    for name, got in times.items():
        print(
            f"{name}: insert of one shared note, median of 200: "
            f"{statistics.median(got) * 1e6:.1f} µs"
        )


if __name__ == "__main__":
    what = sys.argv[1]
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    {"audit": audit, "count": count, "write": write}[what](size)
