"""The two write-behind shells (store/postgres/behind.py on a thread, aio/pg_behind.py as
tasks) make a batch of statements alike (store/postgres/batches.py, generated from its async
source), and neither raises a failed write into the search that queued it. No database: the
transaction is a fake that records what it was given."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Iterator

import pytest

from memstrata.aio.pg_behind import AsyncWriteBehind
from memstrata.store.postgres.behind import LOCK_TIMEOUT, Statement, WriteBehind

BAD = "UPDATE no_such_table SET x = 1"
LOGGER = "memstrata.store.postgres"


class Conn:
    def __init__(self) -> None:
        self.sql: list[str] = []

    def execute(self, sql: str, params: object = ()) -> None:
        self.sql.append(sql)
        if sql == BAD:
            raise RuntimeError("relation no_such_table does not exist")


class AsyncConn(Conn):
    async def execute(self, sql: str, params: object = ()) -> None:  # type: ignore[override]
        Conn.execute(self, sql, params)


class Transactions:
    """Each transaction's statements and whether it committed."""

    def __init__(self) -> None:
        self.made: list[tuple[list[str], bool]] = []

    @contextlib.contextmanager
    def sync(self) -> Iterator[Conn]:
        conn = Conn()
        try:
            yield conn
        except BaseException:
            self.made.append((conn.sql, False))
            raise
        self.made.append((conn.sql, True))

    @contextlib.asynccontextmanager
    async def async_(self) -> AsyncIterator[AsyncConn]:
        conn = AsyncConn()
        try:
            yield conn
        except BaseException:
            self.made.append((conn.sql, False))
            raise
        self.made.append((conn.sql, True))


def _statements(done: list[str]) -> list[Statement]:
    return [
        Statement("UPDATE a SET n = n + 1", [], lambda: done.append("a")),
        Statement(BAD, [], lambda: done.append("bad")),
        Statement("UPDATE c SET n = n + 1", [], lambda: done.append("c")),
    ]


EXPECTED = [
    ([LOCK_TIMEOUT, "UPDATE a SET n = n + 1", BAD], False),  # the batch, rolled back
    (["UPDATE a SET n = n + 1"], True),  # then one at a time: the bad one loses no other
    ([BAD], False),
    (["UPDATE c SET n = n + 1"], True),
]


def test_the_thread_shell_makes_a_batch_then_each_alone(caplog: pytest.LogCaptureFixture) -> None:
    tx = Transactions()
    behind = WriteBehind("t", tx.sync)
    release = threading.Event()
    done: list[str] = []
    try:
        behind.submit(
            lambda: None if release.wait(60) else None
        )  # holds the thread: the rest queue
        for statement in _statements(done):
            behind.submit(statement)
        release.set()
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            behind.settle()
    finally:
        release.set()
        behind.close()
    assert tx.made == EXPECTED
    assert done == ["a", "bad", "c"]
    assert "no_such_table" in caplog.text


def test_the_task_shell_makes_a_batch_then_each_alone(caplog: pytest.LogCaptureFixture) -> None:
    tx = Transactions()
    done: list[str] = []

    async def main() -> None:
        behind = AsyncWriteBehind("t", tx.async_)
        release = asyncio.Event()

        async def hold() -> None:
            await release.wait()

        await behind.submit(hold)
        for statement in _statements(done):
            await behind.submit(statement)
        release.set()
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            await behind.settle()

    asyncio.run(main())
    assert tx.made == EXPECTED
    assert done == ["a", "bad", "c"]
    assert "no_such_table" in caplog.text


def _fails() -> None:
    raise RuntimeError("the counter write failed")


def test_a_write_made_in_place_while_closing_is_logged_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A write submitted while the thread is being shut down (close() swapped the pool out
    after submit took it) is made in the caller's thread. Before, its failure was raised into
    the search that queued it (the async shell, and the background thread, log it)."""
    behind = WriteBehind("t")
    behind.submit(lambda: None)  # the thread starts
    behind.settle()
    pool = behind._pool
    assert pool is not None
    pool.shutdown(wait=True)  # what close() does; this submit took the pool before
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        behind.submit(_fails)
    assert "the counter write failed" in caplog.text
    assert behind.pending_rows() == frozenset()
    behind.settle()  # nothing left pending
    behind.close()


def test_a_failed_write_is_logged_by_the_task_shell(caplog: pytest.LogCaptureFixture) -> None:
    async def fails() -> None:
        _fails()

    async def main() -> None:
        behind = AsyncWriteBehind("t")
        await behind.submit(fails, rows=["r"])
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            await behind.settle()
        assert behind.pending_rows() == frozenset()

    asyncio.run(main())
    assert "the counter write failed" in caplog.text


def _waiting(behind: WriteBehind, n: int = 1) -> None:
    """Until ``n`` threads wait on the write-behind's condition (they took their snapshot)."""
    deadline = time.monotonic() + 10
    while len(behind._cv._waiters) < n:  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, "the reader never waited"
        time.sleep(0.001)


@pytest.mark.parametrize("how", ["settle", "settle_rows"])
def test_a_read_waits_for_the_writes_submitted_before_it_not_after(how: str) -> None:
    """``settle`` waits for the writes submitted so far, as the async shell's does (a snapshot
    of its tasks). Before, the thread shell waited until no write at all was pending, so a
    write submitted while it waited (under load: the next search's) held it up too, and a
    steady stream of searches could hold a store write up indefinitely."""
    behind = WriteBehind("t")
    first, second = threading.Event(), threading.Event()
    behind.submit(lambda: None if first.wait(60) else None, rows=["r"])
    settled = threading.Event()

    def read() -> None:
        if how == "settle":
            behind.settle()
        else:
            behind.settle_rows(["r"])
        settled.set()

    reader = threading.Thread(target=read)
    reader.start()
    try:
        _waiting(behind)
        behind.submit(lambda: None if second.wait(60) else None, rows=["r"])  # after the read
        first.set()
        assert settled.wait(10), "the read waited for a write submitted after it"
        assert behind.pending_rows() == frozenset({"r"})  # the second is still pending
    finally:
        first.set()
        second.set()
        reader.join()
        behind.close()
    assert behind.pending_rows() == frozenset()
