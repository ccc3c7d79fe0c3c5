"""Run by hand: ``PYTHONPATH=src:tests python tests/mem31/measure_v19.py [N]``.

SQLite's schema-19 step (caller30: the public rows of the index of readers) on a file of
``N`` (100,000) public records written as schema 18 wrote them (one note added, copied in
SQL under new ids, its public rows taken out and the file marked 18, as caller30's test of
the upgrade does): the step's time and the process's peak RSS before and after it, in a
fresh process each run (three runs). ``PYTHONPATH`` chooses the code measured."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from memstrata import Memory, Scope
from memstrata.store.sqlite.roles import PUBLIC

CHILD = """
import resource, sqlite3, sys, time
from memstrata.store.sqlite import migrations
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
conn.execute("BEGIN IMMEDIATE")
t = time.perf_counter()
migrations._v19(conn)
took = time.perf_counter() - t
conn.execute("COMMIT")
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
rows = conn.execute("SELECT count(*) FROM rr").fetchone()[0]
print(f"{took:.2f} s, peak RSS {before / 1024:.1f} MB before the step, "
      f"{after / 1024:.1f} MB after (+{(after - before) / 1024:.1f}), {rows} rows in rr")
"""


def build(path: Path, n: int) -> None:
    mem = Memory(f"sqlite:///{path}", embedder="hashing", background=False)
    mem.add(Scope("acme", "bob"), "a public harbour note " + "x" * 80, visibility="public")
    mem.close()
    with sqlite3.connect(path) as conn:
        cols = [r[1] for r in conn.execute("PRAGMA table_info(records)") if r[1] != "seq"]
        picked = ", ".join("id || '-' || n.i" if c == "id" else f"r.{c}" for c in cols)
        conn.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
            f"INSERT INTO records ({', '.join(cols)}) SELECT {picked} FROM records r, n",
            (n - 1,),
        )
        conn.execute("DELETE FROM rr WHERE substr(r, 1, ?) = ?", (len(PUBLIC), PUBLIC))
        conn.execute("PRAGMA user_version = 18")
        (count,) = conn.execute(
            "SELECT count(*) FROM records WHERE visibility = 'public'"
        ).fetchone()
        assert count == n, count


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    with tempfile.TemporaryDirectory() as tmp:
        built = Path(tmp) / "old.db"
        build(built, n)
        for k in range(3):
            run = Path(tmp) / f"run{k}.db"
            shutil.copy(built, run)
            out = subprocess.run(
                [sys.executable, "-c", CHILD, str(run)], capture_output=True, text=True, check=True
            )
            print(f"{n} public records: {out.stdout.strip()}")


if __name__ == "__main__":
    main()
