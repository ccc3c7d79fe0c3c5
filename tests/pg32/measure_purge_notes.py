"""What a PostgreSQL store purge reads for refreshed notes, before and after pg32 —
docs/measurements.md, session 32, pg32. Not a test: run it by hand.

    PYTHONPATH=src python tests/pg32/measure_purge_notes.py [turns ...]

For each size: two users built alike of ``turns`` turns and a summary of every ten turns,
each refreshed twice (its first note, archived, dropped its first turn; its current one
names none of them). The victim is a turn one summary's archived note names. One user's
``store.purge([victim])`` runs with today's look-up, the other's with the one before pg32
(old_noted.py). Printed: records whose history the purge read (``_rewrite_versions``),
records the refreshed-note look-up returned, and the purge's time."""

from __future__ import annotations

import sys
import time
import types
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from memstrata import Memory, Message, Scope  # noqa: E402
from memstrata.records import Role  # noqa: E402
from memstrata.store.types import RecordWrite  # noqa: E402
from pg32 import old_noted  # noqa: E402
from purge31b.test_links_equal_scan import _version  # noqa: E402
from servers import postgres  # noqa: E402

BLANK: dict[str, Any] = {
    "sources": [],
    "superseded_by": None,
    "links": {},
    "members": [],
    "cluster_id": None,
    "dropped": None,
    "related": [],
}


def build(mem: Memory, user: str, n: int) -> tuple[Scope, str]:
    scope = Scope("acme", user, session="s1")
    owner = scope.user_scope
    ids: list[str] = []
    for start in range(0, n, 500):
        ids += [
            t.id
            for t in mem.add_messages(
                scope, [Message(Role.USER, f"turn {i}") for i in range(start, min(n, start + 500))]
            )
        ]
    turns = len(ids)
    for k in range(turns // 10):
        r = mem.add(owner, f"summary {k}", type="summary", dedup=False, importance=0.5)
        at = len(ids)
        ids.append(r.id)
        first = list(range(10 * k, 10 * k + 10))
        for spec in (
            {**BLANK, "sources": first},
            {**BLANK, "sources": first[1:], "dropped": [first[0]]},
            {**BLANK, "sources": first[1:], "dropped": [at]},
        ):
            r = mem.store.get(owner, r.id, include_deleted=True)
            new = _version(r, spec, ids)
            mem.store.replace(owner, RecordWrite(new, None, ()), expected_version=r.version)
    return owner, ids[(turns // 20) * 10]  # a summary's first turn, in the middle


def purge(mem: Memory, owner: Scope, victim: str, old: bool) -> tuple[int, int, float]:
    store: Any = mem.store
    inner = store._rewrite_versions
    calls = 0

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return inner(*args, **kwargs)

    store._rewrite_versions = counted
    if old:
        store._unlink_superseded = types.MethodType(old_noted.noted_all, store)
    try:
        t = time.perf_counter()
        report = store.purge(owner, [victim])
        took = time.perf_counter() - t
    finally:
        del store._rewrite_versions
        if old:
            del store._unlink_superseded
    return calls, int(getattr(report, "records", 0) or 0), took * 1e3


def main() -> None:
    server = postgres()
    schema = "t_" + uuid.uuid4().hex[:16]
    with Memory(server.url(schema), embedder="hashing", background=False) as mem:
        for n in [int(a) for a in sys.argv[1:]] or [1000, 10000]:
            t = time.perf_counter()
            new_owner, new_victim = build(mem, f"n{n}", n)
            old_owner, old_victim = build(mem, f"o{n}", n)
            print(n, f"built in {time.perf_counter() - t:.0f} s", flush=True)
            for name, owner, victim, old in (
                ("before", old_owner, old_victim, True),
                ("after", new_owner, new_victim, False),
            ):
                histories, _, ms = purge(mem, owner, victim, old)
                print(n, name, f"histories read {histories}, purge {ms:.0f} ms", flush=True)
    server.drop(schema)


if __name__ == "__main__":
    main()
