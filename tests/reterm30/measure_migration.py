"""Time SQLite's schema 20 / PostgreSQL's step 27 (every turn re-termed by today's rule) on
a store of 10,000 turns of one user: written by today's code (nothing differs) and with
every other turn indexed under the question of the turn two before it (an old store).
The time is that of ``open_store`` on the store marked as older, less that of a plain
open. Run: PYTHONPATH=src:tests python tests/reterm30/measure_migration.py"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import servers
from memstrata import Memory, Message, Role
from memstrata.clock import FixedClock
from memstrata.store import open_store
from reterm30.old_stores import VICTIM, index_under, mark_old, stored
from store.reterm_files import pg_schema

TURNS = 10_000
CALL = 50


def _fill(url: str, old: bool) -> int:
    clock = FixedClock(datetime(2026, 1, 1, tzinfo=UTC))
    mem = Memory(url, embedder="hashing", clock=clock, background=False)
    ids: list[str] = []
    texts: list[str] = []
    try:
        t0 = datetime(2025, 1, 1, tzinfo=UTC)
        for c in range(TURNS // CALL):
            session = None if c % 2 else f"s{c % 7}"
            scope = VICTIM.with_session(session) if session else VICTIM
            msgs = []
            for k in range(CALL):
                i = c * CALL + k
                text = (
                    f"what did we say about topic{i} on day {i % 30}?"
                    if k % 2 == 0
                    else (f"we said topic{i - 1} was fine and the weather held")
                )
                msgs.append(
                    Message(role=Role.USER, content=text, observed_at=t0 + timedelta(minutes=i))
                )
                texts.append(text)
            ids.extend(r.id for r in mem.add_messages(scope, msgs))
            clock.advance(seconds=1)
        n = 0
        if old:
            under = {rid: texts[i - 2] for i, rid in enumerate(ids) if i >= 2 and i % 2}
            before = stored(mem)
            index_under(mem, under)
            after = stored(mem)
            n = sum(before[r] != after[r] for r in ids)
    finally:
        mem.close()
    return n


def _time_open(url: str, mark: bool) -> float:
    if mark:
        mark_old(url)
    t = time.perf_counter()
    open_store(url).close()
    return time.perf_counter() - t


def main() -> None:
    kinds = sys.argv[1:] or ["sqlite", "postgresql"]
    for kind in kinds:
        for old in (False, True):
            runs = []
            for _ in range(3):
                if kind == "sqlite":
                    d = tempfile.mkdtemp()
                    url = f"sqlite:///{Path(d) / 'm.db'}"
                else:
                    url = servers.postgres().url()
                try:
                    n = _fill(url, old)
                    plain = _time_open(url, False)
                    migrated = _time_open(url, True)
                    runs.append((migrated, plain, n))
                finally:
                    if kind != "sqlite":
                        servers.postgres().drop(pg_schema(url))
            med = statistics.median(m for m, _, _ in runs)
            print(
                f"{kind} {'old' if old else 'current'} store ({runs[0][2]} turns differ): "
                f"open with the step {[f'{m:.2f}' for m, _, _ in runs]} s (median {med:.2f}), "
                f"plain open {[f'{p:.2f}' for _, p, _ in runs]} s",
                flush=True,
            )


if __name__ == "__main__":
    main()
