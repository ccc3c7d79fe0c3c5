"""Concurrent ``tasks.start`` in one session (four ``Memory`` objects on one SQLite file, 5
starts each: 4 tasks left active in the first burst) leave several tasks ``active``, while
``start`` promises that "a task still active in this session is closed as abandoned".

Left for ``layers/working.py`` (``_async/layers/working.py``), not in audit29's files:
``start`` reads the current task, closes it and inserts the new one as separate steps;
a start that reads "no active task" between another start's close and its insert inserts a
second active task, and ``current`` then shows the newest while the other stays active for
good (no later start closes it). The fix: close every active task of the session (not only
the newest) and insert the new one in one unit of work of the store (``self._ctx.admit``
already wraps them: a transaction that re-reads the active tasks under the store's write
lock), or have ``current``/``start`` close stale active ones they find."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

from memstrata import Filters, Memory, Scope
from memstrata.errors import ConflictError
from memstrata.records import RecordType

ALICE = Scope("acme", "alice", session="s1")


def test_concurrent_starts_leave_one_active_task(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 't.db'}"
    mems = [Memory(url, embedder="hashing", background=False) for _ in range(4)]
    try:
        mems[0].add(ALICE.user_scope, "x")
        for burst in range(10):
            barrier = threading.Barrier(len(mems))

            def start(
                m: Memory, i: int, burst: int = burst, barrier: threading.Barrier = barrier
            ) -> None:
                barrier.wait()
                for j in range(5):
                    # a ConflictError: lost the race to close the previous task (loud, nothing
                    # inserted)
                    with contextlib.suppress(ConflictError):
                        m.tasks.start(ALICE, f"goal {burst}-{i}-{j}", ["a"])

            threads = [threading.Thread(target=start, args=(m, i)) for i, m in enumerate(mems)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            tasks = mems[0].list(
                ALICE, filters=Filters(types=frozenset({RecordType.TASK})), limit=10_000
            )
            active = [r for r in tasks if r.content.structured.get("status") == "active"]
            if len(active) != 1:
                break
        assert len(active) == 1, [r.content.structured["goal"] for r in active]
    finally:
        for m in mems:
            m.close()
