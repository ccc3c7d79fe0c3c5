"""Measure a whole-user purge (not a test): the purged user has nothing shared with them
(``carol0``) or 10 records (``carol10``), in a tenant of N other records of 50 users, a
tenth of them with 3 more versions, a fiftieth shared with another user through
``set_access`` (a version and an event each).

    PYTHONPATH=src:tests python tests/purgeidx27/measure_purge.py sqlite 2000 20000
    PYTHONPATH=src:tests python tests/purgeidx27/measure_purge.py postgresql 2000

Prints, per purge: the whole purge's seconds and the seconds of taking the user out of
what others shared (the store's ``_drop_reader`` plus the audit log's reader redaction)."""

from __future__ import annotations

import random
import sys
import tempfile
import time
from dataclasses import replace
from typing import Any

from memstrata import Memory, Scope
from memstrata.store import RecordWrite
from store.conftest import Maker

TENANT = "acme"


def _timed(obj: Any, name: str, spent: list[float]) -> None:
    inner = getattr(obj, name)

    def wrapped(*a: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        try:
            return inner(*a, **kw)
        finally:
            spent.append(time.perf_counter() - t)

    setattr(obj, name, wrapped)


def fill(mem: Memory, n: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    maker = Maker()
    store = mem.store
    writes = [
        maker.write(
            maker.record(f"note {i} of user {i % 50}", tenant=TENANT, user=f"u{i % 50}"),
            vector=False,
        )
        for i in range(n)
    ]
    for i in range(0, n, 1000):
        store.insert(writes[i : i + 1000])
    for w in writes:
        r = w.record
        if rng.random() < 0.1:  # three more versions
            for _ in range(3):
                new = replace(
                    r,
                    version=r.version + 1,
                    content=replace(r.content, raw=r.content.raw + " more"),
                )
                store.replace(
                    Scope(TENANT, r.user),
                    RecordWrite(new, None, w.terms),
                    expected_version=r.version,
                )
                r = new
        if rng.random() < 0.02:  # shared with another user: a version and an event
            mem.set_access(
                Scope(TENANT, r.user),
                r.id,
                visibility="shared",
                allowed_users=[f"u{(int(r.user[1:]) + 1) % 50}"],
            )
    for name in ("carol0", "carol10"):
        mem.add(Scope(TENANT, name), f"{name}'s own note")
    for w in writes[:: max(1, n // 10)][:10]:  # ten records shared with carol10
        r = w.record
        mem.set_access(
            Scope(TENANT, r.user), r.id, visibility="shared", allowed_users=["carol10", "dave"]
        )


def main() -> None:
    kind, sizes = sys.argv[1], [int(a) for a in sys.argv[2:]]
    server = None
    if kind == "postgresql":
        from servers import postgres

        server = postgres()
    for n in sizes:
        with tempfile.TemporaryDirectory() as d:
            url = f"sqlite:///{d}/m.db" if kind == "sqlite" else server.url()  # type: ignore[union-attr]
            with Memory(url, embedder="hashing", background=False) as mem:
                t = time.perf_counter()
                fill(mem, n)
                built = time.perf_counter() - t
                reader: list[float] = []
                scrub: list[float] = []
                if kind == "sqlite":
                    _timed(mem.store, "_scrub", scrub)  # VACUUM and the WAL emptied
                _timed(mem.store, "_drop_reader", reader)
                import memstrata.audit_backends as ab
                import memstrata.store.postgres.audit as pa

                _timed(ab, "sqlite_redact_reader", reader)
                _timed(pa, "redact_reader", reader)
                for who in ("carol0", "carol10"):
                    reader.clear()
                    scrub.clear()
                    t = time.perf_counter()
                    report = mem.purge(Scope(TENANT, who))
                    whole = time.perf_counter() - t
                    assert report.remaining == 0, report
                    print(
                        f"{kind} n={n} {who}: purge {whole:.3f} s, "
                        f"without VACUUM {whole - sum(scrub):.3f} s, "
                        f"shared-with step {sum(reader):.3f} s (built in {built:.0f} s)",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
