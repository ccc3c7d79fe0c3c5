"""Processes opening one new SQLite file at the same moment all open it.

Turning a new file to WAL takes an exclusive lock, and SQLite answers "database is
locked" at once (its busy handler is not asked) when another opener holds a lock: one of
``serve --workers 2``'s processes on a new store failed to start, and uvicorn's
supervisor then stopped the whole server (a flaky CI failure of
``tests/server/test_serve_resilience.py``). Four processes opening a new file together,
60 times: 2–8 of 240 opens failed before.
"""

from __future__ import annotations

import multiprocessing as mp
from multiprocessing.synchronize import Barrier
from pathlib import Path
from queue import Queue

import pytest

from memstrata.errors import MemstrataError
from memstrata.store.sqlite.store import SQLiteStore

ROUNDS = 60
OPENERS = 4


def _open(path: str, start: Barrier, results: Queue[str]) -> None:
    try:
        start.wait()
        store = SQLiteStore(path)
        store.close()
        results.put("opened")
    except MemstrataError as exc:
        results.put(str(exc))


@pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="forks the openers")
def test_processes_opening_a_new_file_together_all_open_it(tmp_path: Path) -> None:
    ctx = mp.get_context("fork")
    failures: list[str] = []
    for round_ in range(ROUNDS):
        path = str(tmp_path / f"r{round_}.db")
        start, results = ctx.Barrier(OPENERS), ctx.Queue()
        openers = [ctx.Process(target=_open, args=(path, start, results)) for _ in range(OPENERS)]
        for p in openers:
            p.start()
        for p in openers:
            p.join(60)
            assert p.exitcode == 0, f"an opener exited with {p.exitcode}"
        failures += [r for r in (results.get(timeout=10) for _ in openers) if r != "opened"]
        # and the file opens afterwards
        SQLiteStore(path).close()
    assert not failures, f"{len(failures)} of {ROUNDS * OPENERS} opens failed: {failures[0]}"
