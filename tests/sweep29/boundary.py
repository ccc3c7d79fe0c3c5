"""One process of the day-boundary race (test_counter_rows_bounded.py): takes ``n`` of the
per-user daily counter at the given instant, each its own transaction, after ``go`` exists."""

from __future__ import annotations

import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from memstrata.quota_types import day_take
from memstrata.store import open_store

url, when, n, go = sys.argv[1], datetime.fromisoformat(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
store: Any = open_store(url)
try:
    while not Path(go).exists():
        time.sleep(0.005)
    for _ in range(n):
        assert store.take_counters([day_take("emb", "acme", "alice", when, 1, None)]) is None
finally:
    store.close()
