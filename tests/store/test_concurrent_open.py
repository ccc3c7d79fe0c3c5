"""Processes opening one new SQLite file at the same moment all open it.

Turning a new file to WAL takes an exclusive lock, and SQLite answers "database is
locked" at once (its busy handler is not asked) when another opener holds a lock: one of
``serve --workers 2``'s processes on a new store failed to start, and uvicorn's
supervisor then stopped the whole server (a flaky CI failure of
``tests/server/test_serve_resilience.py``). Four processes opening a new file together,
60 times: 2–8 of 240 opens failed before.

Likewise the API key table of a file written before keys could name a user: every opener
saw its two columns missing, and the second ``ALTER TABLE`` failed ("duplicate column").
"""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
from collections.abc import Callable
from multiprocessing.synchronize import Barrier
from pathlib import Path
from queue import Queue

import pytest

from memstrata.errors import MemstrataError
from memstrata.server.keys import SQLiteKeyStore
from memstrata.store.sqlite.store import SQLiteStore

ROUNDS = 60
OPENERS = 4


def _open_store(path: str) -> None:
    SQLiteStore(path).close()


def _open_keys(path: str) -> None:
    SQLiteKeyStore(path)


def _open(opener: Callable[[str], None], path: str, start: Barrier, results: Queue[str]) -> None:
    try:
        start.wait()
        opener(path)
        results.put("opened")
    except MemstrataError as exc:
        results.put(str(exc))


def _open_together(opener: Callable[[str], None], paths: list[str]) -> list[str]:
    """Each path opened by OPENERS processes at once; what the failed opens said."""
    ctx = mp.get_context("fork")
    failures: list[str] = []
    for path in paths:
        start, results = ctx.Barrier(OPENERS), ctx.Queue()
        args = (opener, path, start, results)
        openers = [ctx.Process(target=_open, args=args) for _ in range(OPENERS)]
        for p in openers:
            p.start()
        for p in openers:
            p.join(60)
            assert p.exitcode == 0, f"an opener exited with {p.exitcode}"
        failures += [r for r in (results.get(timeout=10) for _ in openers) if r != "opened"]
        opener(path)  # and the file opens afterwards
    return failures


forks = pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="forks openers")


@forks
def test_processes_opening_a_new_file_together_all_open_it(tmp_path: Path) -> None:
    failures = _open_together(_open_store, [str(tmp_path / f"r{i}.db") for i in range(ROUNDS)])
    assert not failures, f"{len(failures)} of {ROUNDS * OPENERS} opens failed: {failures[0]}"


@forks
def test_processes_opening_an_old_key_table_together_all_open_it(tmp_path: Path) -> None:
    paths = [str(tmp_path / f"k{i}.db") for i in range(ROUNDS)]
    for path in paths:  # the table as it was before keys named a user
        with sqlite3.connect(path) as conn:
            conn.execute(
                "CREATE TABLE api_keys (id TEXT PRIMARY KEY, key_hash TEXT NOT NULL UNIQUE, "
                "tenant TEXT NOT NULL, role TEXT NOT NULL, name TEXT NOT NULL DEFAULT '', "
                "created_at TEXT NOT NULL, revoked_at TEXT)"
            )
        conn.close()
    failures = _open_together(_open_keys, paths)
    assert not failures, f"{len(failures)} of {ROUNDS * OPENERS} opens failed: {failures[0]}"
    columns = {row[1] for row in sqlite3.connect(paths[0]).execute("PRAGMA table_info(api_keys)")}
    assert {"user", "roles"} <= columns
