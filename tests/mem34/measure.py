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
    spec = importlib.util.spec_from_loader(f"memstrata.{name}", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "memstrata"
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
            _median_ms(lambda log=logs[k], q=q: log.query_audit("acme", q), repeat=reps)
            for k, reps in (("before", 5), ("after", 20))
        ]
        print(f"{label}: {len(got[1])} events, before {times[0]:.3f} ms, after {times[1]:.4f} ms")


if __name__ == "__main__":
    what = sys.argv[1]
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    {"audit": audit}[what](size)
