"""Before/after of ``memstrata migrate`` in parts, side by side in one run (not a test).

    PYTHONPATH=src python tests/mig29/measure_migrate.py BEFORE_SRC AFTER_SRC [REPEATS [KINDS]]

``BEFORE_SRC`` and ``AFTER_SRC`` are two ``src`` directories (e.g. ``git archive`` of the
branch's parent, and the branch's). Each measurement runs in a fresh process on the tree
named, alternating before and after, into a new target:

- ``long``: one record with 20,000 earlier versions (imphist27's file, ~1 KB a version),
  ``copy_store`` SQLite -> SQLite and SQLite -> PostgreSQL (copy and verify): its time,
  then, in a run of its own, the traced peak (``tracemalloc``) above what it started with;
- ``short``: 10,000 records (``tests/migrate/conftest.bulk``: one in ten updated twice,
  one in twenty deleted), SQLite -> SQLite and SQLite -> PostgreSQL: copy and verify
  seconds from the report.

PostgreSQL is the test suite's (``tests/servers.py``), started once by this script.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def child(kind: str, source: str, target: str, traced: bool) -> dict[str, float]:
    import tracemalloc

    from memstrata.store.migrate import copy_store

    if traced:
        tracemalloc.start()
    held = tracemalloc.get_traced_memory()[0] if traced else 0
    started, cpu = time.perf_counter(), time.process_time()
    report = copy_store(source, target)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    out = {
        "ok": float(report.ok),
        "seconds": seconds,
        "cpu": cpu,  # this process's: not PostgreSQL's
        "copy": report.copy_seconds,
        "verify": report.verify_seconds,
        "versions": float(report.counts["versions"].target),
        "records": float(report.counts["records"].target),
    }
    if traced:
        out["traced_mb"] = (tracemalloc.get_traced_memory()[1] - held) / 1e6
        tracemalloc.stop()
    return out


def _build(work: Path, after: str) -> dict[str, str]:
    """The two source files, made once with the branch's tree (same schema before)."""
    sys.path[:0] = [after, str(TESTS)]
    from imphist27.conftest import base_record, write_long_history
    from memstrata import Memory
    from migrate.conftest import bulk

    long_db, short_db = work / "long.db", work / "short.db"
    rec = base_record(work)
    path = write_long_history(work / "long.jsonl", rec, 20_000)
    url = f"sqlite:///{long_db}"
    with Memory(url, embedder="hashing", background=False) as mem, path.open() as fp:
        assert mem.import_records(fp).versions == 20_000
    bulk(f"sqlite:///{short_db}", 10_000)
    return {"long": f"sqlite:///{long_db}", "short": f"sqlite:///{short_db}"}


def _run(src: str, args: list[str]) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=f"{src}:{TESTS}")
    out = subprocess.run(
        [sys.executable, __file__, "--child", *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    return json.loads(out.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def main(before: str, after: str, repeats: int, kinds: tuple[str, ...]) -> None:
    sys.path.insert(0, str(TESTS))
    from servers import postgres

    pg = postgres()
    work = Path(tempfile.mkdtemp(prefix="mig29-measure-"))
    sources = _build(work, after)
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    rows: list[tuple[str, str, str, dict[str, float]]] = []
    for rep in range(repeats):
        for kind in kinds:
            for dst in ("sqlite", "postgresql"):
                for label, tree in (("before", before), ("after", after)):
                    modes = ("time", "traced") if kind == "long" and rep == 0 else ("time",)
                    for mode in modes:
                        target = (
                            f"sqlite:///{work / (uuid.uuid4().hex + '.db')}"
                            if dst == "sqlite"
                            else pg.url()
                        )
                        got = _run(tree, [kind, sources[kind], target, mode])
                        rows.append((kind, dst, label, got))
                        print(kind, dst, label, mode, json.dumps(got), flush=True)
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    if sys.argv[1] == "--child":
        kind, source, target, mode = sys.argv[2:6]
        print(json.dumps(child(kind, source, target, mode == "traced")))
    else:
        repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 3
        kinds = tuple(sys.argv[4].split(",")) if len(sys.argv) > 4 else ("long", "short")
        main(sys.argv[1], sys.argv[2], repeats, kinds)
