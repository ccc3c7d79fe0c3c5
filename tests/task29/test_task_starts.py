"""``tasks.start`` closes every task active in the session and inserts the new one as one
unit of work (``layers/working.py``): concurrent starts (threads, coroutines, processes on one
SQLite file or PostgreSQL database) leave exactly one active task, and every task they closed
is kept (``abandoned``, its first version in its history). Each test failed before the fix
(several tasks left active)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from memstrata import AsyncMemory, Filters, Memory, Scope
from memstrata.errors import ConflictError
from memstrata.records import MemoryRecord, RecordType

ALICE = Scope("acme", "alice", session="s1")
TASKS = Filters(types=frozenset({RecordType.TASK}))


def _tasks(mem: Memory, scope: Scope = ALICE) -> list[MemoryRecord]:
    return mem.list(scope, filters=TASKS, limit=10_000)


def _check(mem: Memory, started: list[str], scope: Scope = ALICE) -> None:
    tasks = _tasks(mem, scope)
    status = {r.content.structured["goal"]: r.content.structured["status"] for r in tasks}
    assert sorted(status) == sorted(started)  # every start that returned stored its task
    active = [g for g, s in status.items() if s == "active"]
    assert len(active) == 1, active
    assert mem.tasks.current(scope).content.structured["goal"] == active[0]
    for r in tasks:
        if r.content.structured["status"] == "abandoned":
            first = mem.history(scope, r.id)[0]
            assert first.content.structured["status"] == "active"
            assert first.content.structured["goal"] == r.content.structured["goal"]


def _burst(mems: list[Memory], burst: int, starts: int = 4) -> list[str]:
    barrier = threading.Barrier(len(mems))
    started: list[str] = []

    def run(m: Memory, i: int) -> None:
        barrier.wait()
        for j in range(starts):
            goal = f"goal {burst}-{i}-{j}"
            with contextlib.suppress(ConflictError):  # a storm of writers: loud, none written
                m.tasks.start(ALICE, goal, ["a"])
                started.append(goal)

    threads = [threading.Thread(target=run, args=(m, i)) for i, m in enumerate(mems)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return started


@pytest.mark.parametrize("store", ["sqlite", "memory", "postgresql"])
def test_concurrent_starts_leave_one_active_task(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if store == "memory":
        one = Memory("memory://", embedder="hashing", background=False)
        mems = [one] * 4
    else:
        url = (
            request.getfixturevalue("pg_url")
            if store == "postgresql"
            else f"sqlite:///{tmp_path / 't.db'}"
        )
        mems = [Memory(url, embedder="hashing", background=False) for _ in range(4)]
    try:
        started: list[str] = []
        for burst in range(6):
            started += _burst(mems, burst)
            _check(mems[0], started)
    finally:
        for m in dict.fromkeys(mems):
            m.close()


def test_concurrent_async_starts_leave_one_active_task(tmp_path: Path) -> None:
    async def main() -> None:
        mem = AsyncMemory(f"sqlite:///{tmp_path / 'a.db'}", embedder="hashing", background=False)
        await mem.open()
        try:
            goals = [f"goal {i}" for i in range(12)]
            await asyncio.gather(*(mem.tasks.start(ALICE, g, ["a"]) for g in goals))
            tasks = await mem.list(ALICE, filters=TASKS, limit=100)
            assert sorted(r.content.structured["goal"] for r in tasks) == sorted(goals)
            active = [r for r in tasks if r.content.structured["status"] == "active"]
            assert len(active) == 1
        finally:
            await mem.close()

    asyncio.run(main())


_CHILD = """
import sys
from memstrata import Memory, Scope
from memstrata.errors import ConflictError
mem = Memory(sys.argv[1], embedder="hashing", background=False)
scope = Scope("acme", "alice", session="s1")
sys.stdin.readline()  # every process starts at once
for j in range(8):
    try:
        mem.tasks.start(scope, f"goal {sys.argv[2]}-{j}", ["a"])
        print(f"goal {sys.argv[2]}-{j}", flush=True)
    except ConflictError:
        pass
mem.close()
"""


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_starts_from_several_processes_leave_one_active_task(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = (
        request.getfixturevalue("pg_url")
        if store == "postgresql"
        else f"sqlite:///{tmp_path / 'p.db'}"
    )
    mem = Memory(url, embedder="hashing", background=False)
    try:
        mem.tasks.start(ALICE, "first", ["a"])  # the store exists before the children open it
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
        children = [
            subprocess.Popen(
                [sys.executable, "-c", _CHILD, url, str(i)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=env,
            )
            for i in range(3)
        ]
        for c in children:
            assert c.stdin is not None
            c.stdin.write("go\n")
            c.stdin.flush()
        started = ["first"]
        for c in children:
            out, _ = c.communicate(timeout=120)
            assert c.returncode == 0
            started += out.split("\n")[:-1]
        _check(mem, started)
    finally:
        mem.close()
