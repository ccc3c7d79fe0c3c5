"""Every job a run claimed ends in exactly one of its report's counts, and a job a purge
took back is counted ``revoked`` — also when the worker found out before the job started
or before it wrote anything (its lease heartbeat saw the job gone, or finishing it was
refused).

Before session 23 such a job was counted ``lost`` ("its lease ran out before it started";
"another worker runs it"), with a warning, though no other worker held it: a real second
process (``flush``, what ``memstrata worker`` runs) held inside the user's first job while
the test purges, its heartbeat renewing a short lease meanwhile, then let go."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memstrata import Memory, Scope
from purge22.held import HeldJob

ALICE = Scope("acme", "alice-r4nd", session="s1")
ALICE_LATER = Scope("acme", "alice-r4nd", session="s2")
FIRST = [
    {"role": "user", "content": "My name is Alice and I live in Lisbon."},
    {"role": "assistant", "content": "Noted: Lisbon."},
]
SECOND = [
    {"role": "user", "content": "I am allergic to peanuts."},
    {"role": "assistant", "content": "Noted: no peanuts."},
]
LEASE = 0.6  # the other process's heartbeat renews every 0.2 s
OUTCOMES = ("done", "retried", "failed", "lost", "revoked", "given_back")


@dataclass
class Backend:
    url: str
    use_async: bool = False

    def memory(self) -> Memory:
        return Memory(self.url, embedder="hashing", background=False)

    def held(self, gate: Path) -> HeldJob:
        return HeldJob(self.url, gate, use_async=self.use_async, lease_seconds=LEASE)


@pytest.fixture(params=["sqlite", "sqlite-async", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param.startswith("sqlite"):
        return Backend(f"sqlite:///{tmp_path / 'm.db'}", request.param == "sqlite-async")
    return Backend(request.getfixturevalue("pg_url"))


def _adds_up(result: dict[str, Any]) -> None:
    assert result["claimed"] == sum(result[k] for k in OUTCOMES), result


def _purged_while_held(backend: Backend, tmp_path: Path, purge: Any) -> dict[str, Any]:
    """Two jobs of Alice (one per session) in one claim of the other process, held in the
    first; ``purge(mem, turns)`` while it is held; the heartbeat sees it before the job
    goes on."""
    with backend.memory() as mem:
        turns = mem.add_messages(ALICE, FIRST)  # type: ignore[arg-type]
        mem.add_messages(ALICE_LATER, SECOND)  # type: ignore[arg-type]
        other = backend.held(tmp_path / "gate")
        try:
            other.wait_held()
            purge(mem, turns)
            time.sleep(LEASE * 2)  # several renewals of the held claim
        finally:
            result = other.release()
    result["output"] = other.output()
    return result


def test_jobs_of_a_purged_user_are_revoked_not_lost(backend: Backend, tmp_path: Path) -> None:
    result = _purged_while_held(backend, tmp_path, lambda mem, turns: mem.purge(ALICE))
    assert (result["revoked"], result["lost"], result["done"], result["failed"]) == (
        2,
        0,
        0,
        0,
    ), result
    assert result["errors"] == [], result
    _adds_up(result)
    assert "another worker" not in result["output"], result["output"]


def test_jobs_taken_back_by_a_records_purge_are_revoked_and_run_again(
    backend: Backend, tmp_path: Path
) -> None:
    result = _purged_while_held(
        backend, tmp_path, lambda mem, turns: mem.purge(ALICE, [t.id for t in turns])
    )
    # both claims taken back: both stopped (revoked), then both run again on what is left
    assert (result["revoked"], result["lost"], result["done"], result["failed"]) == (
        2,
        0,
        2,
        0,
    ), result
    _adds_up(result)
    assert "another worker" not in result["output"], result["output"]
    with backend.memory() as mem:
        jobs = mem.store.list_jobs("acme", ALICE.user)
    assert sorted((j.status.value, j.attempts) for j in jobs) == [("done", 1), ("done", 1)]
