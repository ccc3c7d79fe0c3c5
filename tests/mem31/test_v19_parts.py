"""SQLite's schema 19 (caller30: the public rows of the index of readers) reads the public
records a part at a time (``_V19_PART``, 5,000; before mem31 all of them in one
``fetchall``), gives the rows an uninterrupted run gave, and survives a ``kill -9`` in the
middle: the step is one transaction, so the file is left as schema 18 left it (no public
row, version 18) and the next open runs the step again, to the same rows."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memstrata import Memory, Scope
from memstrata.store.sqlite import migrations
from memstrata.store.sqlite.roles import PUBLIC, public_reader

BOB = Scope("acme", "bob")
DAVE = Scope("acme", "dave")
CAROL = BOB.as_caller("carol")
N = 23


def _old(path: Path) -> list[str]:
    """A file as schema 18 wrote it (caller30's way: no public row, version 18); the ids
    of its public records."""
    mem = Memory(f"sqlite:///{path}", embedder="hashing", background=False)
    try:
        public = []
        for i in range(N):
            who = DAVE if i % 4 == 3 else BOB
            r = mem.add(who, f"harbour note {i}", visibility="public" if i % 3 else None)
            if i % 3:
                public.append(r.id)
    finally:
        mem.close()
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM rr WHERE substr(r, 1, ?) = ?", (len(PUBLIC), PUBLIC))
        conn.execute("PRAGMA user_version = 18")
    return public


def _public_rows(path: Path) -> tuple[int, set[tuple[str, bytes, str, str]]]:
    with sqlite3.connect(path) as conn:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        rows = conn.execute(
            "SELECT t, r, u, i FROM rr WHERE substr(r, 1, ?) = ?", (len(PUBLIC), PUBLIC)
        ).fetchall()
    return int(version), {(str(t), bytes(r), str(u), str(i)) for t, r, u, i in rows}


def _wanted(path: Path) -> set[tuple[str, bytes, str, str]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT tenant, user, id, observed_at, seq FROM records WHERE visibility = 'public'"
        ).fetchall()
    return {(t, public_reader(u, at, seq), u, i) for t, u, i, at, seq in rows}


def test_the_step_reads_parts_and_gives_every_public_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.db"
    public = _old(path)
    want = _wanted(path)
    assert len(want) == len(public)
    reads: list[int] = []
    monkeypatch.setattr(migrations, "_V19_PART", 4, raising=False)  # absent before mem31
    real = migrations._v19

    def counted(conn: sqlite3.Connection) -> None:
        # the rows each read of the step's SELECT gave (the connection traced)
        conn.set_trace_callback(
            lambda sql: reads.append(1) if "visibility = 'public'" in sql else None
        )
        try:
            real(conn)
        finally:
            conn.set_trace_callback(None)

    monkeypatch.setattr(
        migrations,
        "MIGRATIONS",
        [(v, counted if s is real else s) for v, s in migrations.MIGRATIONS],
    )
    Memory(f"sqlite:///{path}", embedder="hashing", background=False).close()
    version, rows = _public_rows(path)
    assert version == migrations.SCHEMA_VERSION
    assert rows == want
    assert len(reads) == len(public) // 4 + 1 + (len(public) % 4 > 0)  # parts, and the empty one


_KILLED = """
import sys, time
from memstrata.store.sqlite import migrations, roles
migrations._V19_PART = 4
made = roles.public_reader
calls = [0]
def stop(*a):
    calls[0] += 1
    if calls[0] == 7:  # a part written in the step's transaction, the next one being read
        print("mid", flush=True)
        time.sleep(600)
    return made(*a)
roles.public_reader = stop
from memstrata.store import open_store
open_store(sys.argv[1])
"""


def test_a_kill_mid_step_leaves_schema_18_and_the_next_open_redoes_it(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _old(path)
    want = _wanted(path)
    before = _public_rows(path)
    assert before == (18, set())
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
    assert _public_rows(path) == before  # nothing of the step's transaction is left
    mem = Memory(f"sqlite:///{path}", embedder="hashing", background=False)
    try:
        listed = {r.id for r in mem.list(CAROL, limit=100)}
    finally:
        mem.close()
    assert _public_rows(path) == (migrations.SCHEMA_VERSION, want)
    bobs = {i for _, _, u, i in want if u == "bob"}
    assert listed == bobs
