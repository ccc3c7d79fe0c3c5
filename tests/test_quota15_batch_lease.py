"""``add_messages`` admits its batch under one quota lease, whatever its length.

Each lease is a store round trip to take and one to release (on PostgreSQL, a row lock
each), so a batch of N turns must not take N of them; the whole batch is admitted or
refused at once (all or nothing). The ingest jobs that follow derive records for the
library (``for_system``) and take none. ``Memory`` and ``AsyncMemory`` alike.
"""

from __future__ import annotations

import collections
import inspect
from typing import Any

import pytest

from memstrata.errors import QuotaExceededError
from memstrata.quotas import Quota, Quotas
from test_concurrent_services import ALICE, KINDS
from test_quota_services import Mem, run


def _counting(m: Mem, calls: collections.Counter[str]) -> None:
    store: Any = m.memory.store
    for name in ("lease", "take_counters"):
        real = getattr(store, name)

        def counted(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            calls[_name] += 1
            return _real(*args, **kwargs)

        async def acounted(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            calls[_name] += 1
            return await _real(*args, **kwargs)

        setattr(store, name, acounted if inspect.iscoroutinefunction(real) else counted)


@pytest.mark.parametrize("kind", KINDS)
def test_a_batch_of_turns_takes_one_lease_and_is_admitted_whole(kind: str) -> None:
    async def body(m: Mem) -> None:
        calls: collections.Counter[str] = collections.Counter()
        _counting(m, calls)
        for n in (1, 12, 40):
            calls.clear()
            turns = [{"role": "user", "content": f"turn {i} of a batch of {n}"} for i in range(n)]
            await m("add_messages", ALICE, turns)
            assert calls == {"lease": 1, "take_counters": 1}, (n, calls)
        calls.clear()
        await m("flush", ALICE)
        assert calls["lease"] == 0  # derived records: counted, never admitted
        used = await m.count(ALICE)
        with pytest.raises(QuotaExceededError, match="max_records"):
            await m("add_messages", ALICE, [{"role": "user", "content": "x"}] * max(1, 61 - used))
        assert await m.count(ALICE) == used  # refused whole: not one turn of it written

    run(kind, body, quotas=Quotas(per_user=Quota(max_records=60, embeddings_per_day=1000)))
