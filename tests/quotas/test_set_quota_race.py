"""``set_quota`` checks usage and saves as one step for writers (issue 10, closing note):
a write from another process can no longer land between the count and the save, nor be
admitted under the quota read before the new one was saved. The test holds ``set_quota``
between its count and its save (the store's ``set_meta`` waits) while a second process's
``Memory`` writes: the write must wait and then be refused, never leave the user above the
quota just stored. Before the fix the 5 records landed (14 records, quota 10)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.errors import QuotaExceededError
from memstrata.filters import Filters
from memstrata.quotas import Quota, Quotas

S = Scope("acme", "dora", session="s1")
EVERYTHING = Filters(include_deleted=True, include_superseded=True)


@pytest.mark.parametrize("limits", ["embeddings-only", "records-limit"])
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_write_cannot_slip_between_set_quotas_check_and_save(
    backend: str, limits: str, request: pytest.FixtureRequest, tmp_path: Path, clock: FixedClock
) -> None:
    url = (
        f"sqlite:///{tmp_path / 'q.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    per_user = Quota(
        embeddings_per_day=1000, max_records=100 if limits == "records-limit" else None
    )
    quotas = Quotas(per_user=per_user)
    admin = Memory(url, embedder="hashing", clock=clock, background=False, quotas=quotas)
    writer = Memory(url, embedder="hashing", clock=clock, background=False, quotas=quotas)
    try:
        writer.add_messages(S, [{"role": "user", "content": f"turn {i}"} for i in range(9)])
        store: Any = admin.store
        saving = threading.Event()
        real_set_meta = store.set_meta

        def slow_set_meta(key: str, value: str) -> None:
            if key.endswith(":override"):  # counted 9, about to save the quota of 10
                saving.set()
                time.sleep(1.0)
            real_set_meta(key, value)

        store.set_meta = slow_set_meta
        outcome: list[object] = []

        def write() -> None:
            saving.wait(10)
            try:
                writer.add_messages(S, [{"role": "user", "content": f"late {i}"} for i in range(5)])
                outcome.append("written")
            except QuotaExceededError as exc:
                outcome.append(exc)

        t = threading.Thread(target=write)
        t.start()
        admin.set_quota(S, Quota(max_records=10, embeddings_per_day=1000))
        t.join(30)
        used = writer.store.count(S.user_scope, EVERYTHING)
        assert isinstance(outcome[0], QuotaExceededError), (outcome, used)
        assert "max_records (per user)" in str(outcome[0])
        assert used == 9
    finally:
        admin.close()
        writer.close()
