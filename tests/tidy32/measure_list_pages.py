"""What SQLite's ``list_pages`` reads for a name's listing (session 32, tidy32) —
docs/measurements.md. Not a test: run it by hand on two trees.

    PYTHONPATH=<tree>/src python tests/tidy32/measure_list_pages.py [documents] [calls]

The store (made once, kept in the temporary directory, copied for each run): ``documents``
(default 5,000) one-chunk documents of one user, each its own ``qa_id``, and as many facts,
each its own key. For each listing it prints SQLite's plan of each page's statement (the
last finds none), the virtual-machine steps of one ``list(store.list_pages(...))`` and the
median and p90 of ``calls`` (default 200) such walks, each of another name; then those of
``knowledge.chunks``.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from memstrata import Memory, Scope
from memstrata.filters import Filters, MetadataCondition
from memstrata.records import RecordType
from memstrata.store.sqlite.store import SQLiteStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' helpers
from sqlite_steps import vm_steps  # noqa: E402

USER = Scope("acme", "ann")


def _store_file(n: int) -> Path:
    path = Path(tempfile.gettempdir()) / f"tidy32-list-pages-{n}.db"
    if not path.exists():
        part = path.with_suffix(".part")
        with Memory(f"sqlite:///{part}", embedder="hashing", background=False) as m:
            for i in range(n):
                m.knowledge.ingest(USER, f"The text of document {i}.", f"d{i}")
                m.add(USER, f"k{i}: value {i}", type="fact", metadata={"key": f"k{i}"})
        part.rename(path)
    return path


def _listings() -> dict[str, Callable[[int], Filters]]:
    doc = frozenset({RecordType.KNOWLEDGE})
    fact = frozenset({RecordType.FACT})

    def by(
        kind: frozenset[RecordType], field: str, prefix: str, **how: Any
    ) -> Callable[[int], Filters]:
        return lambda i: Filters(
            types=kind, metadata=(MetadataCondition(field, "eq", f"{prefix}{i}"),), **how
        )

    return {
        "document, live (knowledge.chunks)": by(doc, "qa_id", "d"),
        "document, deleted too (knowledge._deleted)": by(doc, "qa_id", "d", include_deleted=True),
        "fact key, live": by(fact, "key", "k"),
        "fact key, superseded too (history)": by(fact, "key", "k", include_superseded=True),
    }


def main(n: int, calls: int) -> None:
    base = Path(tempfile.mkdtemp(prefix="tidy32-"))
    db = base / "m.db"
    shutil.copy(_store_file(n), db)
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        store = mem.store
        assert isinstance(store, SQLiteStore)
        conn = store._reader()
        for name, make in _listings().items():
            said: list[str] = []
            conn.set_trace_callback(said.append)
            pages = list(store.list_pages(USER, make(1)))
            conn.set_trace_callback(None)
            assert sum(len(p) for p in pages) == 1, (name, pages)
            pages_read = [s for s in said if s.lstrip().upper().startswith("SELECT")]
            plan = [
                f"page {k + 1}: {row[3]}"
                for k, sql in enumerate(pages_read)
                for row in conn.execute("EXPLAIN QUERY PLAN " + sql)
            ]
            steps = vm_steps(store, partial(list, store.list_pages(USER, make(2))))
            took = []
            for i in range(calls):
                f = make((i * 7919) % n)
                t0 = time.perf_counter()
                list(store.list_pages(USER, f))
                took.append((time.perf_counter() - t0) * 1000)
            took.sort()
            print(
                f"{name}: {steps} VM steps; median {statistics.median(took):.2f} ms, "
                f"p90 {took[int(len(took) * 0.9)]:.2f} ms"
            )
            for line in plan:
                print(f"    {line}")
        took = []
        for i in range(calls):
            t0 = time.perf_counter()
            mem.knowledge.chunks(USER, f"d{(i * 7919) % n}")
            took.append((time.perf_counter() - t0) * 1000)
        took.sort()
        print(
            f"knowledge.chunks (one store.list): median {statistics.median(took):.2f} ms, "
            f"p90 {took[int(len(took) * 0.9)]:.2f} ms"
        )
    shutil.rmtree(base)


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 5000,
        int(sys.argv[2]) if len(sys.argv) > 2 else 200,
    )
