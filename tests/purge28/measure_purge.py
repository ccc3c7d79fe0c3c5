"""Measure a whole-user purge and its audit redaction (not a test): purgeidx27's tenant of
N other records (tests/purgeidx27/measure_purge.py), plus N audit events of the other
users, one in a hundred with ``carol10`` as actor; ``carol0`` is no event's actor.

    PYTHONPATH=src:tests python tests/purge28/measure_purge.py sqlite 2000 20000
    PYTHONPATH=src:tests python tests/purge28/measure_purge.py postgresql 2000 20000

Prints, per purge: the whole purge's seconds, without SQLite's VACUUM, and the seconds of
the audit log's redaction (``sqlite_redact_subject`` / PostgreSQL ``redact_subject``, both
called once by the store's purge and once by ``Memory.purge``)."""

from __future__ import annotations

import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime

from memstrata import Memory, Scope
from memstrata.audit import AuditEvent
from purgeidx27.measure_purge import TENANT, _timed, fill


def events(mem: Memory, n: int) -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    batch = [
        AuditEvent(
            id=uuid.uuid4().hex,
            tenant=TENANT,
            actor="carol10" if i % 100 == 0 else f"key:{i % 7}",
            action="delete",
            at=at,
            user=f"u{i % 50}",
            record_ids=(f"r{i}",),
        )
        for i in range(n)
    ]
    for i in range(0, n, 1000):
        mem.audit.append(batch[i : i + 1000])


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
                fill(mem, n)
                events(mem, n)
                redact: list[float] = []
                scrub: list[float] = []
                if kind == "sqlite":
                    _timed(mem.store, "_scrub", scrub)
                import memstrata.audit as au
                import memstrata.audit_backends as ab
                import memstrata.store.postgres.audit as pa

                _timed(ab, "sqlite_redact_subject", redact)
                au.sqlite_redact_subject = ab.sqlite_redact_subject  # type: ignore[attr-defined]
                _timed(pa, "redact_subject", redact)
                for who in ("carol0", "carol10"):
                    redact.clear()
                    scrub.clear()
                    t = time.perf_counter()
                    report = mem.purge(Scope(TENANT, who))
                    whole = time.perf_counter() - t
                    assert report.remaining == 0, report
                    acted = len(mem.audit.query(TENANT, actor=who, limit=100000))
                    print(
                        f"{kind} n={n} {who}: purge {whole:.3f} s, without VACUUM "
                        f"{whole - sum(scrub):.3f} s, audit redaction {sum(redact):.3f} s "
                        f"({len(redact)} calls), events still naming them as actor {acted}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
