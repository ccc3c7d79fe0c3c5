"""A process without quotas counts its embeddings once the store's quotas are in use
(quota32).

A ``Memory`` (or ``memstrata worker``) without ``quotas=`` added nothing to the day's
embedding counters that a process with quotas on the same store reads (``serve
--user-quota``): what it embedded for a user was missed by that user's daily quota
(audit31's finding; quota31's fix counted every write of every store in a transaction of
its own and was dropped for its cost). Now a process opened with quotas writes a flag in
the store (``quotas:in_use``), and a process without quotas counts, with no limit, once
it has read the flag (at most every ``FLAG_SECONDS``). What the library derives on its
own is counted by no process."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest
from tests.embedders import WrappedHashing

import memstrata.quotas as sync_quotas
from memstrata import AsyncMemory, FixedClock, Memory, Scope
from memstrata.embedder.base import Matrix
from memstrata.errors import ProviderError, QuotaExceededError
from memstrata.filters import Filters
from memstrata.quotas import Quota, Quotas
from memstrata.records import RecordType

from .conftest import ALICE, DAILY, IN_USE, NOW, plain, served, three_embeddings, used

ROOT = Path(__file__).resolve().parents[2]


def test_a_process_without_quotas_counts_into_the_users_day(shared_url: str) -> None:
    quota_mem = served(shared_url)
    worker = plain(shared_url)
    try:
        three_embeddings(worker)
        assert used(worker) == 3
        assert used(worker, user=False) == 3  # the tenant's day too
        quota_mem.add(ALICE, "alice's passport expires in 2031")
        quota_mem.add(ALICE, "alice flies economy")
        with pytest.raises(QuotaExceededError, match=f"used {DAILY}"):
            quota_mem.add(ALICE, "one more than the day allows")
        # the process without quotas is never refused: it counts on past the limit
        worker.add(ALICE, "alice's seat is 14A")
        assert used(worker) == DAILY + 1
    finally:
        quota_mem.close()
        worker.close()


def test_a_worker_in_another_process_is_counted(shared_url: str) -> None:
    """The same with the process without quotas a separate interpreter."""
    quota_mem = served(shared_url)
    script = textwrap.dedent(
        f"""
        from datetime import datetime, UTC
        from memstrata import FixedClock, Memory, Scope
        mem = Memory({shared_url!r}, embedder="hashing", background=False,
                     clock=FixedClock(datetime.fromisoformat({NOW.isoformat()!r})))
        mem.add_messages(Scope("acme", "alice", session="s1"),
                         [{{"role": "user", "content": f"turn {{i}}"}} for i in range(4)])
        mem.close()
        """
    )
    try:
        subprocess.run(
            [sys.executable, "-c", script],
            check=True,
            timeout=120,
            env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        )
        assert used(quota_mem) == 4
        quota_mem.add(ALICE, "the fifth embedding of the day")
        with pytest.raises(QuotaExceededError, match=f"used {DAILY}"):
            quota_mem.add(ALICE, "the sixth")
    finally:
        quota_mem.close()


def test_a_store_without_quotas_counts_nothing(shared_url: str) -> None:
    """No process with quotas ever opened the store: no flag, no counter row, nothing
    more per write than before."""
    worker = plain(shared_url)
    try:
        three_embeddings(worker)
        assert used(worker) == 0
        assert worker.store.get_meta(IN_USE) is None
    finally:
        worker.close()


def test_a_worker_opened_before_reads_the_flag_again(
    shared_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process without quotas that has read "no quotas" keeps that answer up to
    ``FLAG_SECONDS`` (what a stale flag misses: its writes in that window after the first
    process with quotas opened the store), then reads it again and counts."""
    monkeypatch.setattr(sync_quotas, "FLAG_SECONDS", 3600.0, raising=False)
    worker = plain(shared_url)
    try:
        worker.add(ALICE, "written before any quota")  # reads the flag: not set
        quota_mem = served(shared_url)  # sets it
        try:
            worker.add(ALICE, "written in the stale window")
            assert used(worker) == 0  # missed: the flag read an hour ago says no quotas
            monkeypatch.setattr(sync_quotas, "FLAG_SECONDS", 0.0, raising=False)
            three_embeddings(worker)
            assert used(worker) == 3
            quota_mem.add(ALICE, "the fourth")
            quota_mem.add(ALICE, "the fifth")
            with pytest.raises(QuotaExceededError, match=f"used {DAILY}"):
                quota_mem.add(ALICE, "the sixth")
        finally:
            quota_mem.close()
    finally:
        worker.close()


def test_quotas_given_after_open_set_the_flag(shared_url: str) -> None:
    """``Memory.quotas = ...`` after the store opened, or ``set_quota`` on a memory opened
    without quotas: its first write under them (or the override) sets the flag."""
    late = plain(shared_url)
    try:
        late.quotas = Quotas(per_user=Quota(embeddings_per_day=DAILY))
        late.add(ALICE, "the first write under quotas")
        assert late.store.get_meta(IN_USE) == "1"
        worker = plain(shared_url)
        try:
            three_embeddings(worker)
            assert used(worker) == 4
        finally:
            worker.close()
    finally:
        late.close()


def test_set_quota_sets_the_flag(shared_url: str) -> None:
    admin = plain(shared_url)
    try:
        admin.set_quota(Scope("acme", "bob"), Quota(embeddings_per_day=2))
        assert admin.store.get_meta(IN_USE) == "1"
    finally:
        admin.close()


def test_what_the_library_derives_is_counted(shared_url: str) -> None:
    """Decision (quota32, changed by quota33): the daily quota counts what a user's calls
    ask to embed and, since session 33, what the library derives from them with an
    embedding of its own (an episode, an extracted fact, a promoted key entry), with no
    limit, in whichever process writes it: the caller's next write is refused instead
    (tests/quota33/test_derived_counted.py)."""
    quota_mem = served(shared_url)
    worker = plain(shared_url)
    try:
        turns = [{"role": "user", "content": f"turn {i} about the Lisbon trip"} for i in range(4)]
        worker.add_messages(ALICE, turns)
        worker.end_session(ALICE)
        worker.flush()  # the ingest jobs: an episode of the session, derived
        own = frozenset({RecordType.EPISODE, RecordType.FACT, RecordType.KEY})
        derived = worker.store.count(Scope("acme", "alice"), Filters(types=own))
        assert derived >= 1, "the session's episode was written"
        assert used(worker) == 4 + derived
        with pytest.raises(QuotaExceededError, match=f"used {4 + derived}"):
            quota_mem.add(ALICE, "the sixth")
    finally:
        quota_mem.close()
        worker.close()


class Failing(WrappedHashing):
    """The hashing embedder, down for any text that says "explode"."""

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        if any("explode" in t for t in texts):
            raise RuntimeError("the embedder is down")
        return super().embed_batch(texts, query=query)


def test_a_failed_write_without_quotas_gives_its_count_back(shared_url: str) -> None:
    """Counted before the embedding, as under quotas; a write that fails gives it back."""
    quota_mem = served(shared_url)
    worker = Memory(shared_url, embedder=Failing(), clock=FixedClock(NOW), background=False)
    try:
        worker.add(ALICE, "counted")
        with pytest.raises((ProviderError, RuntimeError), match="embedder is down"):
            worker.add(ALICE, "this one will explode")
        assert used(worker) == 1
    finally:
        quota_mem.close()
        worker.close()


def test_an_async_memory_without_quotas_counts_too(shared_url: str) -> None:
    async def main() -> None:
        async with AsyncMemory(
            shared_url, embedder="hashing", clock=FixedClock(NOW), background=False
        ) as worker:
            await worker.add(ALICE, "alice prefers window seats")
            await worker.add_messages(ALICE, [{"role": "user", "content": "and an aisle"}])

    quota_mem = served(shared_url)
    try:
        asyncio.run(main())
        assert used(quota_mem) == 2
    finally:
        quota_mem.close()
