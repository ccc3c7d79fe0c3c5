"""kill -9 in the middle of a purge on SQLite: the rows go in one transaction, the bytes
after it (a ``TRUNCATE`` checkpoint, and a ``VACUUM`` for a whole user). A process killed
after the commit left the user's words in the file and its WAL, and a store opened again
kept them there as long as it ran (its WAL is emptied only when its last connection
closes cleanly). Now the purge's transaction leaves a marker that the next open (or purge,
or ``compact``) acts on: no byte of the purged words once the store is open again."""

from __future__ import annotations

import random
import signal
import sqlite3
from pathlib import Path

import pytest

from memstrata import Memory, Scope
from memstrata.filters import Filters
from memstrata.store.sqlite.codec import scope_token

from .child import VICTIM
from .kill import file_bytes, run

OTHER = Scope("acme", "bystander-4242", session="so")
N = 300


def _fill(url: str) -> list[str]:
    with Memory(url, embedder="hashing", background=False) as mem:
        ids = [
            r.id
            for r in mem.add_messages(
                VICTIM,
                [
                    {"role": "user", "content": f"my zorblattquix code is {i} and flumble{i:04d}x"}
                    for i in range(N)
                ],
            )
        ]
        porto = [{"role": "user", "content": f"the weather in Porto is mild {i}"} for i in range(N)]
        mem.add_messages(OTHER, porto)
    return ids


def _count(mem: Memory, scope: Scope) -> int:
    return len(mem.list(scope.user_scope, filters=Filters(include_deleted=True), limit=100_000))


def _words_left(path: Path, needles: list[bytes]) -> list[bytes]:
    raw = file_bytes(path)
    return [n for n in needles if n in raw]


# The delete's commit, the VACUUM (at its start and inside it), the WAL's checkpoint.
WHOLE_USER_GATES = ["commit@1", "vacuum@1", "vacuum@1+3", "vacuum@1+150", "pragma wal_checkpoint@1"]


@pytest.mark.parametrize("gate", WHOLE_USER_GATES)
def test_a_whole_user_purge_killed_leaves_no_byte_once_reopened(tmp_path: Path, gate: str) -> None:
    path = tmp_path / "m.db"
    url = f"sqlite:///{path}"
    ids = _fill(url)
    assert run(url, gate, "purge-user") == -signal.SIGKILL
    needles = [b"zorblattquix", VICTIM.user.encode(), scope_token("acme", VICTIM.user).encode()]
    needles += [i.encode() for i in ids[:50]]
    with Memory(url, embedder="hashing", background=False) as mem:
        assert _count(mem, OTHER) == N  # the bystander is whole
        left = _count(mem, VICTIM)
        if gate == "commit@1":  # killed before its commit: nothing was purged, nothing half
            assert left == N
            assert mem.purge(VICTIM.user_scope).remaining == 0
        else:
            assert left == 0
        # Open again, the store holds no byte of the user (it kept them before: the WAL
        # and the pages the purge zeroed were never checkpointed).
        assert _words_left(path, needles) == []
        assert mem.search(OTHER.user_scope, "weather Porto", mode="lexical")
    assert _words_left(path, needles) == []


def test_a_whole_user_purge_killed_at_random_steps_of_its_vacuum(tmp_path: Path) -> None:
    killed = 0
    for n, k in enumerate(random.Random(23).sample(range(1, 300), 3)):
        path = tmp_path / f"m{n}.db"
        url = f"sqlite:///{path}"
        _fill(url)
        killed += run(url, f"vacuum@1+{k}", "purge-user") == -signal.SIGKILL
        with Memory(url, embedder="hashing", background=False) as mem:
            assert _count(mem, VICTIM) == 0 and _count(mem, OTHER) == N
            assert _words_left(path, [b"zorblattquix", VICTIM.user.encode()]) == []
    assert killed  # at least one kill landed inside the VACUUM


@pytest.mark.parametrize("gate", ["commit@1", "pragma wal_checkpoint@1"])
def test_a_purge_of_records_killed_leaves_no_byte_once_reopened(tmp_path: Path, gate: str) -> None:
    path = tmp_path / "m.db"
    url = f"sqlite:///{path}"
    ids = _fill(url)
    purged = ids[:20]
    words = [f"flumble{i:04d}x".encode() for i in range(20)]  # only the purged ones hold them
    assert run(url, gate, "purge-ids", *purged) == -signal.SIGKILL
    with Memory(url, embedder="hashing", background=False) as mem:
        if gate == "commit@1":  # killed before its commit: nothing purged, nothing half
            assert _count(mem, VICTIM) == N
            mem.purge(VICTIM.user_scope, purged)
        assert _count(mem, VICTIM) == N - len(purged)
        assert _words_left(path, words) == []
        assert _words_left(path, [b"flumble0020x"]) == [b"flumble0020x"]  # kept: still there
    assert _words_left(path, words) == []


def _owed(path: Path) -> str | None:
    conn = sqlite3.connect(path)
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'scrub_owed'").fetchone()
    finally:
        conn.close()
    return None if row is None else str(row[0])


def test_a_wal_kept_busy_by_a_reader_stays_owed_and_is_reported(tmp_path: Path) -> None:
    """A checkpoint another connection's read keeps from emptying the WAL leaves the marker
    (and the whole-user purge counts the bytes left in ``remaining``); the next purge or
    ``compact`` once the read ended finishes it."""
    path = tmp_path / "m.db"
    url = f"sqlite:///{path}"
    ids = _fill(url)
    with Memory(url, embedder="hashing", background=False) as mem:
        mem.store._conn.execute("PRAGMA busy_timeout = 0")  # type: ignore[attr-defined]
        reader = sqlite3.connect(path)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM records").fetchone()  # a snapshot held
        mem.purge(VICTIM.user_scope, ids[:5])
        assert _owed(path) == "checkpoint"
        assert mem.purge(VICTIM.user_scope).remaining > 0  # its words are in the WAL still
        assert _owed(path) == "checkpoint"  # VACUUMed: only the checkpoint is owed now
        reader.rollback()
        reader.close()
        report = mem.compact()
        assert report.checkpoint and _owed(path) is None
        assert _words_left(path, [b"zorblattquix", VICTIM.user.encode()]) == []
