"""An import into PostgreSQL with and without the ANALYZE of ``records`` in its
transaction (pg34): docs/measurements.md, session 34, pg34. Not a test: run it by hand.

    PYTHONPATH=src python tests/pg34/measure_import.py ADMIN_URL [RECORDS] [ROUNDS]

The export file is pg33's (tests/pg33/measure_import.py: one user's ``RECORDS`` synthetic
turns, a tenth edited once, with embeddings). Each round imports it into a fresh schema
twice, "before" (the ANALYZE off: ``ANALYZE_IMPORT_AFTER`` out of reach) and "after", and
prints the import's time, each ``insert_history`` call's time, and whether the store
exports again what the file holds."""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from memstrata import Memory  # noqa: E402
from memstrata.store.postgres import dump, store  # noqa: E402
from pg33.measure_import import export_file, export_lines  # noqa: E402


def one(admin: str, path: Path, want: list[Any], mode: str) -> str:
    calls: list[float] = []
    inner = dump.insert_history

    def timed(*args: Any, **kw: Any) -> None:
        t = time.perf_counter()
        inner(*args, **kw)
        calls.append(time.perf_counter() - t)

    dump.insert_history = timed  # type: ignore[assignment]
    store.ANALYZE_IMPORT_AFTER = 10**12 if mode == "before" else 500  # type: ignore[misc]
    schema = "imp_" + uuid.uuid4().hex[:10]
    url = admin + ("&" if "?" in admin else "?") + f"schema={schema}"
    try:
        mem = Memory(url, embedder="hashing", background=False)
        t = time.perf_counter()
        with path.open() as fp:
            report = mem.import_records(fp)
        took = time.perf_counter() - t
        same = export_lines(mem) == want
        mem.close()
    finally:
        dump.insert_history = inner  # type: ignore[assignment]
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    pages = ", ".join(f"{1000 * c:.0f}" for c in calls)
    return (
        f"| {mode} | {took:.2f} s | {report.imported} ({report.versions} versions) | "
        f"{pages} | {same} | {os.getloadavg()[0]:.1f} |"
    )


def main(admin: str, n: int, rounds: int) -> None:
    path = export_file(n)
    want = [json.loads(x) for x in path.read_text().splitlines()]
    want = [x for x in want if "exported_at" not in x]
    for _ in range(rounds):
        for mode in ("before", "after"):
            print(one(admin, path, want, mode), flush=True)


if __name__ == "__main__":
    main(
        sys.argv[1],
        int(sys.argv[2]) if len(sys.argv) > 2 else 10_000,
        int(sys.argv[3]) if len(sys.argv) > 3 else 2,
    )
