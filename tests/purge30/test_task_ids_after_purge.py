"""A purged task's id is never handed out again (``layers/working.py``).

Until session 30 a task's id was a hash of its session and the id of the session's task
inserted last (task29: two starts that read the same tasks made the same id, and the
store's unique ids let one of them in). A purge of the newest task rewound that state, so
the next start made the purged task's id again: start ``a``, start ``b``, purge ``b``,
start ``c`` gave ``c.id == b.id``, and a client or an audit entry holding ``b``'s id named
another task. Now each task gets a random id, and concurrent starts are kept to one
active task by a check of the session's newest task inside the start's transaction
(tests/task29 still pass). The purge leaves no trace: no counter or tombstone holds the
purged id (the purge's own audit event names it, as every purge by ids does). Every store,
sync and async; each test of an id failed before the change (the concurrent starts with
no active task passed before too: they guard the check that replaced the hashed id)"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from pathlib import Path

import pytest

from memstrata import AsyncMemory, Filters, Memory, Scope
from memstrata.errors import ConflictError
from memstrata.records import MemoryRecord, RecordType

ANN = Scope("acme", "ann", session="s1")
TASKS = Filters(types=frozenset({RecordType.TASK}), include_deleted=True)


def test_the_newest_task_purged(mem: Memory) -> None:
    a = mem.tasks.start(ANN, "plan the trip", ["book"])
    b = mem.tasks.start(ANN, "pay the rent", ["transfer"])
    mem.purge(ANN.user_scope, [b.id])
    c = mem.tasks.start(ANN, "water the plants", ["kitchen"])
    assert c.id not in (a.id, b.id)
    assert mem.tasks.current(ANN).id == c.id
    statuses = {r.id: r.content.structured["status"] for r in mem.list(ANN, filters=TASKS)}
    assert statuses == {a.id: "abandoned", c.id: "active"}


def test_the_sessions_only_task_purged(mem: Memory) -> None:
    a = mem.tasks.start(ANN, "plan the trip", ["book"])
    mem.purge(ANN.user_scope, [a.id])
    c = mem.tasks.start(ANN, "water the plants")
    assert c.id != a.id
    assert mem.tasks.current(ANN).id == c.id


def test_a_whole_user_purged(mem: Memory) -> None:
    ids = {mem.tasks.start(ANN, f"goal {i}").id for i in range(3)}
    mem.purge(ANN.user_scope)
    again = {mem.tasks.start(ANN, f"goal {i}").id for i in range(3)}
    assert not ids & again


def test_no_table_but_the_audit_log_keeps_the_purged_id_on_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory(f"sqlite:///{path}", embedder="hashing", background=False) as mem:
        mem.tasks.start(ANN, "plan the trip")
        b = mem.tasks.start(ANN, "pay the rent")
        mem.purge(ANN.user_scope, [b.id])
        c = mem.tasks.start(ANN, "water the plants")
        assert c.id != b.id
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        holding = [
            t
            for t in tables
            if any(b.id in repr(row) for row in conn.execute(f'SELECT * FROM "{t}"'))
        ]
    finally:
        conn.close()
    # the purge's own event names what it purged; no counter or tombstone keeps it
    assert holding == ["audit_log"]


@pytest.mark.parametrize("store", ["memory", "sqlite", "postgresql"])
def test_async(store: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = {
        "memory": lambda: "memory://",
        "sqlite": lambda: f"sqlite:///{tmp_path / 'a.db'}",
        "postgresql": lambda: request.getfixturevalue("pg_url"),
    }[store]()

    async def main() -> None:
        async with AsyncMemory(url, embedder="hashing", background=False) as mem:
            await mem.tasks.start(ANN, "plan the trip")
            b = await mem.tasks.start(ANN, "pay the rent")
            await mem.purge(ANN.user_scope, [b.id])
            c = await mem.tasks.start(ANN, "water the plants")
            assert c.id != b.id
            assert (await mem.tasks.current(ANN)).id == c.id
            # concurrent starts in a session with no active task: one stays active
            other = ANN.with_session("s2")
            await asyncio.gather(*(mem.tasks.start(other, f"goal {i}") for i in range(8)))
            tasks = await mem.list(other, filters=TASKS, limit=100)
            assert len(tasks) == 8 and len([r for r in tasks if _active(r)]) == 1

    asyncio.run(main())


def _first_starts(mems: list[Memory], session: str) -> None:
    """Each Memory starts a task in ``session`` (which has no active task) at once."""
    scope = ANN.with_session(session)
    barrier = threading.Barrier(len(mems))

    def run(m: Memory, i: int) -> None:
        barrier.wait()
        with contextlib.suppress(ConflictError):
            m.tasks.start(scope, f"goal {session}-{i}")

    threads = [threading.Thread(target=run, args=(m, i)) for i, m in enumerate(mems)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@pytest.mark.parametrize("store", ["sqlite", "memory", "postgresql"])
def test_concurrent_starts_with_no_task_active_leave_one(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The case a random id alone would break: no active task for the starts to close
    (a new session, the only task purged, the last one completed), so only the check of
    the session's newest task in each start's transaction keeps them to one."""
    if store == "memory":
        mems = [Memory("memory://", embedder="hashing", background=False)] * 4
    else:
        url = (
            request.getfixturevalue("pg_url")
            if store == "postgresql"
            else f"sqlite:///{tmp_path / 't.db'}"
        )
        mems = [Memory(url, embedder="hashing", background=False) for _ in range(4)]
    try:
        for n in range(8):
            session = f"s{n}"
            scope = ANN.with_session(session)
            _first_starts(mems, session)  # a new session
            active = [r for r in mems[0].list(scope, filters=TASKS) if _active(r)]
            assert len(active) == 1, n
            mems[0].purge(ANN.user_scope, [active[0].id])  # its only task purged
            _first_starts(mems, session)
            active = [r for r in mems[0].list(scope, filters=TASKS) if _active(r)]
            assert len(active) == 1, n
            mems[0].tasks.complete(scope, True, "done")  # its last task completed
            _first_starts(mems, session)
            assert len([r for r in mems[0].list(scope, filters=TASKS) if _active(r)]) == 1, n
    finally:
        for m in dict.fromkeys(mems):
            m.close()


def _active(r: MemoryRecord) -> bool:
    return r.content.structured["status"] == "active"
