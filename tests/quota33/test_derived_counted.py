"""What the library derives is counted, never refused (quota33).

Conversation episodes, facts extracted from turns and the key entries clusters promote are
written by background jobs; until session 33 no process counted their embeddings, so a
``memstrata worker`` that only ran those jobs counted nothing and a user's usage missed
them. Now whichever process writes them counts them in ``embeddings_per_day`` with no
limit, in the write's transaction (one per derived record embedded from its own text); a
job is never refused, so nothing derived is lost at a full quota, and the caller's next
write is refused instead. Summaries and clusters take the mean of their turns' vectors:
no new embedding, not counted."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memstrata import Scope
from memstrata.errors import QuotaExceededError
from memstrata.filters import Filters
from memstrata.records import Message, RecordType, Role

from .conftest import ALICE, DAILY, NOW, plain, served, used

ROOT = Path(__file__).resolve().parents[2]
OWN_EMBEDDING = frozenset({RecordType.EPISODE, RecordType.FACT, RecordType.KEY})
TURNS = [
    Message(Role.USER, "I live in Lisbon and I work as a potter"),
    Message(Role.ASSISTANT, "Noted: Lisbon, pottery"),
]


def queue_session_end(mem: object) -> None:
    """What ``end_session`` enqueues, without running it here (it would flush)."""
    from memstrata.layers.pipeline import make_session_end_job

    mem.store.enqueue([make_session_end_job(ALICE, NOW)])  # type: ignore[attr-defined]


def derived(mem: object) -> int:
    """The records the library derived that were embedded from their own text."""
    store = mem.store  # type: ignore[attr-defined]
    return int(store.count(Scope("acme", "alice"), Filters(types=OWN_EMBEDDING)))


def test_a_worker_counts_what_it_derives(shared_url: str) -> None:
    """``serve`` (quotas, no background jobs here) takes the turns and queues the
    session's end; a ``Memory`` without quotas that only runs the jobs (as ``memstrata
    worker``) writes the episode and the facts: counted (before: the day said 2)."""
    quota_mem = served(shared_url)
    worker = plain(shared_url)
    try:
        quota_mem.add_messages(ALICE, TURNS)
        queue_session_end(quota_mem)
        assert used(quota_mem) == 2
        assert derived(quota_mem) == 0
        worker.flush()
        made = derived(worker)
        assert made >= 1, "the session's episode was written"
        assert used(worker) == 2 + made
        assert used(worker, user=False) == 2 + made
    finally:
        quota_mem.close()
        worker.close()


def test_a_worker_in_another_process_counts_what_it_derives(shared_url: str) -> None:
    quota_mem = served(shared_url)
    script = textwrap.dedent(
        f"""
        from datetime import datetime
        from memstrata import FixedClock, Memory
        mem = Memory({shared_url!r}, embedder="hashing", background=False,
                     clock=FixedClock(datetime.fromisoformat({NOW.isoformat()!r})))
        mem.flush()
        mem.close()
        """
    )
    try:
        quota_mem.add_messages(ALICE, TURNS)
        queue_session_end(quota_mem)
        subprocess.run(
            [sys.executable, "-c", script],
            check=True,
            timeout=120,
            env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        )
        made = derived(quota_mem)
        assert made >= 1
        assert used(quota_mem) == 2 + made
    finally:
        quota_mem.close()


def test_derived_at_a_full_quota_is_written_counted_and_refuses_the_caller(
    shared_url: str,
) -> None:
    """The day's quota is used up by the turns; the jobs (run by the process with quotas
    itself, at ``end_session``) still write the episode, counted past the limit; the
    caller's next write is refused naming that usage."""
    quota_mem = served(shared_url)
    try:
        turns = [Message(Role.USER, f"turn {i} about the Lisbon trip") for i in range(5)]
        quota_mem.add_messages(ALICE, turns)
        quota_mem.end_session(ALICE)  # runs the session's jobs here
        made = derived(quota_mem)
        assert made >= 1, "nothing derived was refused"
        assert used(quota_mem) == DAILY + made
        with pytest.raises(QuotaExceededError, match=f"used {DAILY + made}"):
            quota_mem.add(ALICE, "one more")
    finally:
        quota_mem.close()


def test_a_store_without_quotas_counts_nothing_derived(shared_url: str) -> None:
    """Guard: no process with quotas ever opened the store, no count at all."""
    mem = plain(shared_url)
    try:
        mem.add_messages(ALICE, TURNS)
        mem.end_session(ALICE)
        mem.flush()
        assert derived(mem) >= 1
        assert used(mem) == 0
    finally:
        mem.close()
