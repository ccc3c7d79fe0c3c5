"""An older store gets its index of citations on opening (purge31): SQLite schema 21
writes the rows of what the file holds, a part at a time in one transaction (a ``kill -9``
mid-step leaves the file as it was, and the next open gives the uninterrupted result);
PostgreSQL step 28 makes the GIN index the look-up uses (EXPLAIN)."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from memstrata import Memory
from memstrata.consolidation import stale_summaries
from memstrata.rederive import stale_derived
from memstrata.store.postgres.schema import SCHEMA_VERSION as PG_SCHEMA_VERSION

from .users import user_of_size

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from store.reterm_files import _pg, pg_as_schema, pg_version  # noqa: E402

_SRC = "substr(r, 1, 4) = CAST('src:' AS BLOB)"


def _rows(path: Path) -> tuple[int, list[tuple[object, ...]]]:
    conn = sqlite3.connect(path)
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        rows = sorted(conn.execute(f"SELECT t, r, u, i FROM rr WHERE {_SRC}").fetchall())
        return version, rows
    finally:
        conn.close()


def _old_file(path: Path) -> tuple[list[tuple[object, ...]], list[str]]:
    """A file written today with 40 turns (3 records citing the victim, 4 others), then
    turned into schema 20's: no citation rows."""
    with Memory(f"sqlite:///{path}", embedder="hashing", background=False) as mem:
        scope, victim = user_of_size(mem, "bob", 40)
        found = _found(mem, victim)
    version, want = _rows(path)
    assert version == 22 and len(want) == 4 + 3 * 2  # 4 notes; 3 cite the victim and turn 0
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(f"DELETE FROM rr WHERE {_SRC}")
        conn.execute("PRAGMA user_version = 20")
    finally:
        conn.close()
    return want, found


def _found(mem: Memory, victim: str) -> list[str]:
    from memstrata import Scope

    owner = Scope("acme", "bob")
    ctx = mem._ctx
    return sorted(r.id for r, _ in stale_derived(ctx, owner, {victim}, everything=True)) + [
        s.id for s, _ in stale_summaries(ctx, owner, {victim})
    ]


def _victim(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(
            conn.execute("SELECT id FROM records WHERE raw = 'locker 20 fact'").fetchone()[0]
        )
    finally:
        conn.close()


def test_schema_21_writes_the_rows_a_write_makes(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    want, found = _old_file(path)
    assert _rows(path) == (20, [])
    with Memory(f"sqlite:///{path}", embedder="hashing", background=False) as mem:
        assert _found(mem, _victim(path)) == found
    assert _rows(path) == (22, want)


_KILLED = """
import sys, time
from memstrata.store.sqlite import cites
cites.PART = 2
rows = cites.sqlite_rows
calls = 0
def stop(*a, **k):
    global calls
    calls += 1
    if calls == 3:  # a part written, the next one read
        print("mid", flush=True)
        time.sleep(600)
    return rows(*a, **k)
cites.sqlite_rows = stop
from memstrata.store import open_store
open_store(sys.argv[1])
"""


def test_a_kill_mid_step_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    want, found = _old_file(path)
    copy = tmp_path / "copy.db"
    shutil.copy(path, copy)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED, f"sqlite:///{path}"],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "mid"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        if proc.stdout is not None:
            proc.stdout.close()
    assert _rows(path) == (20, [])  # the step's transaction left nothing of itself
    with Memory(f"sqlite:///{path}", embedder="hashing", background=False) as mem:
        assert _found(mem, _victim(path)) == found
    Memory(f"sqlite:///{copy}", embedder="hashing", background=False).close()
    assert _rows(path) == _rows(copy) == (22, want)


def test_step_28_makes_the_index_the_lookup_reads(pg_url: str) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        scope, victim = user_of_size(mem, "bob", 40)
        found = _found(mem, victim)
    with _pg(pg_url) as conn:  # the schema as step 27 left it
        conn.execute("DROP INDEX records_cited")
        conn.execute("DROP FUNCTION cited_ids")
    pg_as_schema(pg_url, 27)
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        assert pg_version(pg_url) == PG_SCHEMA_VERSION  # (was 29: pg32 added step 30)
        assert _found(mem, victim) == found
    with _pg(pg_url) as conn:
        conn.execute("ANALYZE records")
        plan = "\n".join(
            str(r[0])
            for r in conn.execute(
                "EXPLAIN SELECT id FROM records WHERE "
                "cited_ids(type, source_ids, structured, superseded_by) && %s::text[] "
                "AND type <> 'message' "
                "AND tenant = 'acme' AND \"user\" = 'bob' ORDER BY observed_at, seq",
                [[victim]],
            )
        )
    assert "records_cited" in plan, plan
