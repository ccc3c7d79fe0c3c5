"""quota32 with Redis's hot tier (``buffer=redis://...``): a process with quotas asks the
Redis mirror of the day's counters first. A process without quotas counts through the same
mirror when it has the buffer too, and into the durable counters alone when it has none:
the durable counters stay the authority, so the quota holds either way."""

from __future__ import annotations

import pytest

from memstrata.errors import QuotaExceededError

from .conftest import ALICE, DAILY, plain, served, three_embeddings, used


@pytest.mark.parametrize("worker_buffer", [True, False], ids=["both-buffered", "worker-direct"])
def test_a_process_without_quotas_counts_beside_a_redis_mirror(
    shared_url: str, redis_buffer_url: str, worker_buffer: bool
) -> None:
    quota_mem = served(shared_url, buffer=redis_buffer_url)
    worker = plain(shared_url, buffer=redis_buffer_url if worker_buffer else None)
    try:
        quota_mem.add(ALICE, "the first embedding, through the mirror")  # loads it: 1
        three_embeddings(worker)
        assert used(worker) == 4  # the durable counter
        quota_mem.add(ALICE, "the fifth")
        with pytest.raises(QuotaExceededError, match=f"used {DAILY}"):
            quota_mem.add(ALICE, "the sixth")
        assert used(quota_mem) == DAILY
    finally:
        quota_mem.close()
        worker.close()
