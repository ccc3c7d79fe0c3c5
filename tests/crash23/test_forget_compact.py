"""kill -9 in the middle of an explicit ``forget`` and of ``compact`` (SQLite and
PostgreSQL). A forget is a soft delete per record (its note written as a new version, and
its status; one transaction with its audit event since session 24,
``tests/durable24/test_forget_atomic.py``): killed anywhere, every record is live or
forgotten with its note, none lost, each restorable, and the forget run again completes.
``compact`` is one ``VACUUM`` (SQLite: all or nothing) or one ``VACUUM FULL`` per table
(PostgreSQL): killed inside, the store is intact and the next ``compact`` rewrites every
table."""

from __future__ import annotations

import random
import signal
import sqlite3
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.filters import Filters
from memstrata.records import MemoryRecord, RecordStatus

from .child import VICTIM
from .kill import run

N = 400


def _fill(url: str) -> list[str]:
    with Memory(url, embedder="hashing", background=False) as mem:
        turns = [{"role": "user", "content": f"turn {i} about an ibis{i:03d}q"} for i in range(N)]
        return [r.id for r in mem.add_messages(VICTIM, turns)]


def _all(mem: Memory) -> dict[str, MemoryRecord]:
    every = mem.list(VICTIM.user_scope, filters=Filters(include_deleted=True), limit=10_000)
    return {r.id: r for r in every}


FORGET_GATES = [
    "update records set status@1",  # the first note written, its delete about to run
    "update records set status@3",
    "after:memstrata.maintenance._soft_delete@2",  # two forgotten, the audit not yet told
]


@pytest.mark.parametrize("gate", FORGET_GATES)
def test_a_killed_forget_loses_nothing_and_completes_again(url: str, gate: str) -> None:
    ids = _fill(url)
    chosen = ids[:5]
    assert run(url, gate, "forget", *chosen) == -signal.SIGKILL
    with Memory(url, embedder="hashing", background=False) as mem:
        held = _all(mem)
        assert set(held) == set(ids)  # nothing lost
        forgotten = [i for i in chosen if held[i].status is RecordStatus.DELETED]
        if gate.endswith("status@1"):  # inside the first one's transaction (session 24: its
            # note, delete and audit event are one transaction): nothing of it was written
            assert not forgotten and "forgotten" not in held[chosen[0]].metadata
        else:
            assert forgotten  # the kill came after at least one
        for i in forgotten:  # each with its note, restorable
            assert held[i].metadata["forgotten"]["reason"] == "asked to"
        assert all(held[i].status is RecordStatus.ACTIVE for i in ids[5:])
        mem.forget(VICTIM, [i for i in chosen if i not in forgotten], reason="asked to")
        held = _all(mem)
        assert all(held[i].status is RecordStatus.DELETED for i in chosen)
        restored = mem.restore(VICTIM, chosen[0])
        assert restored.status is RecordStatus.ACTIVE


def _intact(url: str) -> None:
    with Memory(url, embedder="hashing", background=False) as mem:
        assert len(_all(mem)) == N
        for i in random.Random(5).sample(range(N), 3):
            hits = mem.search(VICTIM.user_scope, f"ibis{i:03d}q", mode="lexical", top_k=1)
            assert hits and hits[0].record.text == f"turn {i} about an ibis{i:03d}q"
            assert mem.search(VICTIM.user_scope, f"turn {i} about an ibis", mode="dense")


@pytest.mark.parametrize("gate", ["vacuum@1+5", "vacuum@1+60", "pragma wal_checkpoint@1"])
def test_a_killed_sqlite_compact_leaves_the_store_intact(tmp_path: Path, gate: str) -> None:
    path = f"{tmp_path}/m.db"
    url = f"sqlite:///{path}"
    _fill(url)
    assert run(url, gate, "compact") == -signal.SIGKILL
    _intact(url)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()
    with Memory(url, embedder="hashing", background=False) as mem:
        report = mem.compact()
        assert report.checkpoint and report.rewritten == (path,)


@pytest.mark.parametrize("gate", ["vacuum (full@1", "vacuum (full@4", "checkpoint@1"])
def test_a_killed_pg_compact_leaves_the_store_intact(pg_url: str, gate: str) -> None:
    _fill(pg_url)
    assert run(pg_url, gate, "compact") == -signal.SIGKILL
    _intact(pg_url)
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        report = mem.compact()
        assert not report.skipped and len(report.rewritten) >= 10
