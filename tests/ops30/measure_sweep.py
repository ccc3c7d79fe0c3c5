"""Measure maintain's counter sweep (docs/measurements.md, ops30): URL N."""

import statistics
import sys
import time
from datetime import UTC, datetime, timedelta

from memstrata import FixedClock, Memory, Scope
from memstrata.quota_types import day_take

url, users = sys.argv[1], int(sys.argv[2])
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
TODAY = START + timedelta(days=10)
mem = Memory(url, embedder="hashing", clock=FixedClock(TODAY), background=False)
store = getattr(mem.store, "durable", mem.store)
t = time.perf_counter()
for day in range(2):
    when = START + timedelta(days=day)
    takes = [day_take("emb", "acme", f"u{u}", when, 1, None) for u in range(users)]
    for i in range(0, users, 500):
        store.take_counters(takes[i : i + 500])
for u in range(1000):  # live users: yesterday and today
    for d in (TODAY - timedelta(days=1), TODAY):
        store.take_counters([day_take("emb", "acme", f"live{u}", d, 1, None)])
fill = time.perf_counter() - t


def rows():
    return sum(1 for k in store.meta_items() if k.startswith("quota:"))


before = rows()
calls, swept = [], 0
scope = Scope("acme", "alice")
has = hasattr(mem.maintain(scope), "counters_swept")  # warm; may sweep
while True:
    t = time.perf_counter()
    r = mem.maintain(scope)
    calls.append(time.perf_counter() - t)
    n = getattr(r, "counters_swept", 0)
    swept += n
    if n == 0 or len(calls) > 200:
        break
after = rows()
print(
    f"{url.split(':')[0]} users={users} rows before={before} after={after} "
    f"maintain calls={len(calls)} ms per call: median {statistics.median(calls) * 1000:.1f} "
    f"max {max(calls) * 1000:.1f} last(nothing to do) {calls[-1] * 1000:.1f} fill {fill:.1f}s"
)
mem.close()
