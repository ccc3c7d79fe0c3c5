"""One process of the day-boundary race (test_counter_rows_bounded.py): takes ``n`` of the
per-user daily counter at the given instant, each its own transaction, once ``go`` exists
(and ``wait``, when given: another process's first take is then in before this one's
first); touches ``mark`` (when given) after its first take."""

from __future__ import annotations

import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from memstrata.quota_types import day_take
from memstrata.store import open_store

url, when, n = sys.argv[1], datetime.fromisoformat(sys.argv[2]), int(sys.argv[3])
go, mark, wait = (Path(a) if a != "-" else None for a in sys.argv[4:7])
store: Any = open_store(url)
try:
    while not all(p is None or p.exists() for p in (go, wait)):
        time.sleep(0.002)
    for i in range(n):
        assert store.take_counters([day_take("emb", "acme", "alice", when, 1, None)]) is None
        if i == 0 and mark is not None:
            mark.touch()
finally:
    store.close()
