"""Records per tenant (issue 10 §5, "per tenant and per user") and the records lease.

A tenant's ``max_records`` counts every user's records; a write (``add``, ``add_messages``,
``import_records``) that would pass it is refused with ``QuotaExceededError`` naming the quota,
the limit and the reset, and nothing is written. Several processes writing for different
users of one tenant admit exactly the limit between them. The lease that makes the count and
the write atomic is renewed while a batch runs: a batch slower than one lease keeps it, and
a writer that starts meanwhile counts only after it committed.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.errors import QuotaExceededError
from memstrata.quotas import Quota, Quotas
from memstrata.store import open_store

from .test_atomic_quotas import WORKERS, _spawn, _stored, _url

A = Scope("acme", "alice", session="s1")
B = Scope("acme", "bob", session="s1")
ELSEWHERE = Scope("other", "carol", session="s1")


def _total(mem: Memory, *scopes: Scope) -> int:
    return sum(
        len(mem.list(s.user_scope, filters={"include_deleted": True}, limit=1000)) for s in scopes
    )


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_a_tenants_users_share_its_records_quota(
    kind: str, tmp_path: Path, clock: FixedClock
) -> None:
    url = f"sqlite:///{tmp_path / 't.db'}" if kind == "sqlite" else "memory://"
    quotas = Quotas(per_user=Quota(max_records=4), per_tenant=Quota(max_records=6))
    with Memory(url, embedder="hashing", clock=clock, background=False, quotas=quotas) as mem:
        mem.add_messages(A, [{"role": "user", "content": f"a{i}"} for i in range(4)])
        with pytest.raises(QuotaExceededError, match=r"max_records \(per user\).*limit 4"):
            mem.add(A, "a fifth for alice")
        mem.add(B, "bob one", dedup=False)
        with pytest.raises(QuotaExceededError) as err:
            mem.add_messages(B, [{"role": "user", "content": f"b{i}"} for i in range(2)])
        msg = str(err.value)
        assert "max_records (per tenant)" in msg and "limit 6" in msg and "used 5" in msg
        assert "resets when records are purged" in msg and "Nothing was written" in msg
        assert _total(mem, A, B) == 5
        mem.add(B, "bob two", dedup=False)  # the last place
        with pytest.raises(QuotaExceededError, match="per tenant"):
            mem.add(B, "bob three", dedup=False)
        mem.add_messages(ELSEWHERE, [{"role": "user", "content": f"c{i}"} for i in range(4)])
        mem.purge(A, [mem.list(A.user_scope, limit=1)[0].id])  # a purge frees a place
        mem.add(B, "bob three", dedup=False)
        assert _total(mem, A, B) == 6


def test_an_import_is_admitted_whole_or_not_at_all(clock: FixedClock) -> None:
    src = Memory("memory://", embedder="hashing", background=False)
    for who in (A, B):
        for i in range(3):
            src.add(who, f"{who.user} note {i}", dedup=False)
    bufs = []
    for who in (A, B):
        buf = io.StringIO()
        src.export_records(who.user_scope, buf)
        bufs.append(buf.getvalue())
    src.close()
    both = bufs[0] + "".join(bufs[1].splitlines(keepends=True)[1:])  # one header
    quotas = Quotas(per_tenant=Quota(max_records=5))
    with Memory(
        "memory://", embedder="hashing", clock=clock, background=False, quotas=quotas
    ) as mem:
        with pytest.raises(QuotaExceededError, match=r"per tenant.*limit 5"):
            mem.import_records(io.StringIO(both))  # 6 records of two users: one too many
        assert _total(mem, A, B) == 0
        assert mem.import_records(io.StringIO(bufs[0])).imported == 3
        with pytest.raises(QuotaExceededError):
            mem.import_records(io.StringIO(bufs[1]))
        assert _total(mem, A, B) == 3


@pytest.mark.parametrize("kind", ["sqlite", "postgresql+redis"])
def test_processes_writing_for_different_users_admit_exactly_the_tenant_quota(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url, buffer = _url(kind, tmp_path, request)
    limit, calls = 29, 12  # 4 x 12 = 48 attempts for 29 places
    cfgs = [
        {
            "url": url,
            "buffer": buffer,
            "tenant": "acme",
            "user": f"user{i}",
            "calls": calls,
            "per_user": {},
            "per_tenant": {"max_records": limit},
        }
        for i in range(WORKERS)
    ]
    reports = _spawn(cfgs, tmp_path)
    assert [r["unexpected"] for r in reports] == [[]] * WORKERS
    acknowledged = [i for r in reports for i in r["ids"]]
    assert len(acknowledged) == limit
    assert sum(r["refused"] for r in reports) == WORKERS * calls - limit
    stored: set[str] = set()
    for i in range(WORKERS):
        stored |= _stored(url, Scope("acme", f"user{i}"))
    assert stored == set(acknowledged)
    store: Any = open_store(url)
    try:
        assert store.count_tenant_records("acme") == limit
    finally:
        store.close()


class _SlowEmbedder(HashingEmbedder):
    """Takes ``delay`` seconds per passage batch: a batch slower than one lease."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay
        self.started = threading.Event()  # a passage batch began (under the records lease)

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Any:
        if not query and self.delay:
            self.started.set()
            time.sleep(self.delay)
        return np.asarray(super().embed_batch(texts, query=query))


@pytest.mark.parametrize(
    ("scope_b", "quotas"),
    [(A, Quotas(per_user=Quota(max_records=3))), (B, Quotas(per_tenant=Quota(max_records=3)))],
    ids=["user-lease", "tenant-lease"],
)
def test_a_batch_slower_than_its_lease_keeps_it(
    scope_b: Scope, quotas: Quotas, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memstrata.quotas as q

    # Renewed every 0.25 s: a renewal thread starved that long on a loaded machine (a full
    # test run on 2 cores) would lose the lease; 0.1 s did once.
    monkeypatch.setattr(q, "LEASE_SECONDS", 0.75)
    url = f"sqlite:///{tmp_path / 'lease.db'}"
    embedder = _SlowEmbedder(2.5)
    slow = Memory(url, embedder=embedder, background=False, quotas=quotas)
    fast = Memory(url, embedder=_SlowEmbedder(0.0), background=False, quotas=quotas)
    errors: list[BaseException] = []

    def batch() -> None:
        try:
            slow.add_messages(A, [{"role": "user", "content": f"slow {i}"} for i in range(3)])
        except BaseException as exc:  # reported below
            errors.append(exc)

    try:
        t = threading.Thread(target=batch)
        t.start()
        # The slow batch embeds under the lease (taken before it embeds): wait until it
        # does — a fixed sleep let the fast writer go first on a loaded machine — then
        # past one lease length, so only renewals keep it.
        assert embedder.started.wait(60)
        time.sleep(1.0)
        with pytest.raises(QuotaExceededError):
            fast.add(scope_b, "the fourth record", dedup=False)  # waits, then counts 3
        t.join()
        assert errors == []
        assert _total(fast, A, B) == 3
    finally:
        slow.close()
        fast.close()
