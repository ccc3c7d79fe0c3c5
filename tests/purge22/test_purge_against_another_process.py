"""A purge while a job of the user runs in *another process* (``flush`` or ``memstrata
worker``), held after it read the user's turns and before it writes what it derived from
them (facts, clusters, summaries).

Before session 22 that process wrote its facts after the purge ("location: Lisbon" for a
purged user, or citing a purged turn): the purged words came back, in a file whose purge
report had said 0 remaining. Now every write transaction of a job checks its claim inside
the transaction (jobs.Fence) and the purge deletes the user's jobs (or takes their claims
back) in its own: the late write is refused, the job stops (``revoked``, not a failure),
and after a purge of some records the job runs again on the records left.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata import Filters, Memory, Scope
from memstrata.store.sqlite.codec import scope_token

from .held import HeldJob

ALICE = Scope("acme", "alice-q7zv", session="s1")
BOB = Scope("acme", "bob-k2mw", session="s9")
LISBON = "My name is Alice and I live in Lisbon, on Rua Zambujeira."
PEANUTS = "I am allergic to peanuts."
TURNS = [
    {"role": "user", "content": LISBON},
    {"role": "assistant", "content": "Noted: Lisbon."},
    {"role": "user", "content": PEANUTS},
    {"role": "assistant", "content": "Noted: no peanuts."},
]
EVERYTHING = Filters(include_deleted=True, include_superseded=True)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[str]:
    yield f"sqlite:///{tmp_path / 'm.db'}"


def _bytes(url: str) -> bytes:
    path = url.removeprefix("sqlite:///")
    return b"".join(Path(path + s).read_bytes() for s in ("", "-wal") if Path(path + s).exists())


def _texts(url: str, scope: Scope) -> list[str]:
    with Memory(url, embedder="hashing", background=False) as mem:
        return [r.text for r in mem.list(scope.user_scope, filters=EVERYTHING, limit=1000)]


def test_a_user_purged_while_another_process_runs_their_job_stays_purged(
    db: str, tmp_path: Path
) -> None:
    with Memory(db, embedder="hashing", background=False) as mem:
        mem.add_messages(BOB, [{"role": "user", "content": "Bob lives in Porto."}])
        mem.flush()
        mem.add_messages(ALICE, TURNS)  # type: ignore[arg-type]
        other = HeldJob(db, tmp_path / "gate")
        try:
            assert "Alice" in other.wait_held()  # it derived from the turns, not written yet
            report = mem.purge(ALICE)
        finally:
            result = other.release()
    assert report.remaining == 0
    assert _texts(db, ALICE) == []
    data = _bytes(db)
    for needle in ("Lisbon", "Zambujeira", "peanuts", ALICE.user, scope_token("acme", ALICE.user)):
        assert needle.encode() not in data, needle
    assert "Bob lives in Porto." in _texts(db, BOB)  # the bystander is untouched
    assert result["revoked"] == 1 and result["failed"] == 0, result


def test_records_purged_while_another_process_runs_a_job_that_read_them(
    db: str, tmp_path: Path
) -> None:
    """``purge(scope, ids)``: the job's claim is taken back, its late write refused, and it
    runs again on the turns left (the peanuts fact is derived from what is left)."""
    with Memory(db, embedder="hashing", background=False) as mem:
        turns = mem.add_messages(ALICE, TURNS)  # type: ignore[arg-type]
        other = HeldJob(db, tmp_path / "gate")
        try:
            assert "Alice" in other.wait_held()
            report = mem.purge(ALICE, [turns[0].id, turns[1].id])
        finally:
            result = other.release()
        jobs = mem.store.list_jobs("acme", ALICE.user)
    assert report.remaining == 0
    texts = _texts(db, ALICE)
    assert not [t for t in texts if "Lisbon" in t or "Zambujeira" in t], texts
    data = _bytes(db)
    for needle in ("Lisbon", "Zambujeira"):
        assert needle.encode() not in data, needle
    assert any("peanut" in t and t != PEANUTS for t in texts), texts  # derived again
    assert result["revoked"] == 1 and result["failed"] == 0, result
    assert result["done"] >= 1  # the same job, run again on the turns left
    assert [j.status.value for j in jobs] == ["done"] * len(jobs)
