"""A count without a limit goes into the write's own transaction (quota33).

Session 32 counted a write's embeddings, in a process without quotas on a store whose
quotas are in use, in a transaction of its own before the write (4.4-6.2 ms more per
write on PostgreSQL), and so did a process whose quotas limit no embeddings. A process
that died between that take and its write kept a count with no write. Now the store's
write transaction adds the count just before its ``COMMIT``
(:mod:`memstrata.store.counted_writes`): the write and its count commit together or not at
all. A limited take (``embeddings_per_day``) stays before the embedding: the check must
come before anything is embedded. Real SQLite and PostgreSQL, real threads and a second
interpreter."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from memstrata import Memory
from memstrata.errors import MemstrataError, QuotaExceededError
from memstrata.quotas import Quota
from memstrata.records import Message, Role

from .conftest import ALICE, DAILY, NOW, plain, records, served, used

ROOT = Path(__file__).resolve().parents[2]


def test_a_process_that_dies_before_its_write_counts_nothing(shared_url: str) -> None:
    """A second interpreter without quotas adds one note, then dies while embedding the
    next (``os._exit``: no ``finally``, no give-back). Before: its take was committed
    before the embedding, so the day said 2 for one record written."""
    quota_mem = served(shared_url)  # sets the store's quotas:in_use flag
    script = textwrap.dedent(
        f"""
        import os
        from datetime import datetime
        from memstrata import FixedClock, Memory, Scope
        from tests.embedders import WrappedHashing

        class Dies(WrappedHashing):
            def embed_batch(self, texts, *, query=False):
                if any("die" in t for t in texts):
                    os._exit(3)
                return super().embed_batch(texts, query=query)

        mem = Memory({shared_url!r}, embedder=Dies(), background=False,
                     clock=FixedClock(datetime.fromisoformat({NOW.isoformat()!r})))
        mem.add(Scope("acme", "alice"), "a note that lands")
        mem.add(Scope("acme", "alice"), "a note whose process will die here")
        """
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", script],
            timeout=120,
            env={"PYTHONPATH": f"{ROOT / 'src'}:{ROOT}", "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
        )
        assert done.returncode == 3, done.stderr
        assert used(quota_mem) == 1
        assert used(quota_mem, user=False) == 1
        assert records(quota_mem) == 1
    finally:
        quota_mem.close()


def _refuse_inserts_saying_boom(url: str, mem: Memory) -> None:
    """A trigger on the store's records table that fails an insert whose text says
    "boom": a write that fails inside its own transaction, after the count was added."""
    if url.startswith("sqlite"):
        lite = sqlite3.connect(url.removeprefix("sqlite:///"))
        lite.execute(
            "CREATE TRIGGER q33_boom BEFORE INSERT ON records WHEN NEW.raw LIKE '%boom%' "
            "BEGIN SELECT RAISE(ABORT, 'boom refused'); END"
        )
        lite.commit()
        lite.close()
        return
    import psycopg

    store: Any = mem.store
    schema = store.options.schema
    with psycopg.connect(store.options.conninfo, autocommit=True) as conn:
        conn.execute(
            f"CREATE FUNCTION {schema}.q33_boom() RETURNS trigger LANGUAGE plpgsql AS $$ "
            "BEGIN IF NEW.raw LIKE '%%boom%%' THEN RAISE EXCEPTION 'boom refused'; END IF; "
            "RETURN NEW; END $$"
        )
        conn.execute(
            f"CREATE TRIGGER q33_boom BEFORE INSERT ON {schema}.records FOR EACH ROW "
            f"EXECUTE FUNCTION {schema}.q33_boom()"
        )


@pytest.mark.parametrize("quota", [None, Quota(max_records=50)], ids=["plain", "records"])
def test_a_write_that_rolls_back_counts_nothing(shared_url: str, quota: Quota | None) -> None:
    """The insert fails inside the write transaction that carries the count: neither is
    kept (a process without quotas, and one whose quotas limit records only)."""
    flag = served(shared_url)
    mem = plain(shared_url) if quota is None else served(shared_url, quota)
    try:
        _refuse_inserts_saying_boom(shared_url, mem)
        mem.add(ALICE, "a note that lands")
        with pytest.raises(MemstrataError, match="boom"):
            mem.add(ALICE, "a note that goes boom")
        with pytest.raises(MemstrataError, match="boom"):
            mem.add_messages(ALICE, [Message(Role.USER, "turns go boom too")])
        assert used(mem) == 1
        assert used(mem, user=False) == 1
        mem.add_messages(ALICE, [Message(Role.USER, "a turn that lands")])
        assert used(mem) == 2
    finally:
        mem.close()
        flag.close()


def _in_threads(jobs: list[Any]) -> None:
    start = threading.Barrier(len(jobs))
    errors: list[BaseException] = []

    def run(job: Any) -> None:
        start.wait()
        try:
            job()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors


def test_writers_with_and_without_a_limit_at_once(shared_url: str) -> None:
    """Four memories with ``embeddings_per_day=5`` and three without quotas add notes for
    one user at once, each on its own thread and connection: the limited ones admit at
    most 5 between them, and the day's counters equal what was written (every count
    committed with its write, none lost between concurrent takes)."""
    limited = [served(shared_url) for _ in range(4)]
    free = [plain(shared_url) for _ in range(3)]
    admitted: list[int] = []
    lock = threading.Lock()

    def limited_job(mem: Memory, k: int) -> Any:
        def job() -> None:
            for i in range(4):
                try:
                    mem.add(ALICE, f"limited writer {k} note {i}")
                except QuotaExceededError:
                    continue
                with lock:
                    admitted.append(1)

        return job

    def free_job(mem: Memory, k: int) -> Any:
        def job() -> None:
            for i in range(3):
                mem.add(ALICE, f"free writer {k} note {i}")

        return job

    try:
        _in_threads(
            [limited_job(m, k) for k, m in enumerate(limited)]
            + [free_job(m, k) for k, m in enumerate(free)]
        )
        written = records(free[0])
        assert written == len(admitted) + 9
        assert len(admitted) <= DAILY
        assert used(free[0]) == written
        assert used(free[0], user=False) == written
    finally:
        for m in limited + free:
            m.close()


def test_records_quota_writers_at_once(shared_url: str) -> None:
    """Memories whose quotas limit records only (their embeddings counted by the write):
    sixteen adds on four threads at once under ``max_records=6`` write exactly 6; every
    add was embedded (a full records quota still embeds, to find a near duplicate) and is
    counted, the refused ones apart (the embedding spent deciding)."""
    mems = [served(shared_url, Quota(max_records=6)) for _ in range(4)]

    def job(mem: Memory, k: int) -> Any:
        def run() -> None:
            for i in range(4):
                with contextlib.suppress(QuotaExceededError):
                    mem.add(ALICE, f"writer {k} says fact number {i} about topic {k * 7 + i}")

        return run

    try:
        _in_threads([job(m, k) for k, m in enumerate(mems)])
        assert records(mems[0]) == 6
        assert used(mems[0]) == 16
    finally:
        for m in mems:
            m.close()


def test_a_near_duplicate_merge_is_counted(shared_url: str) -> None:
    """A write that stores no new record (``add`` merging a near duplicate into the
    stored one) is counted by its update's transaction."""
    flag = served(shared_url)
    mem = plain(shared_url)
    try:
        mem.add(ALICE, "Alice prefers window seats.")
        mem.add(ALICE, "alice prefers window seats")  # merged: a new version
        assert records(mem) == 1
        assert used(mem) == 2
    finally:
        mem.close()
        flag.close()
