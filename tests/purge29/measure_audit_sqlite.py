"""SQLite: what reading the tenant's audit log costs a whole-user purge, against the
VACUUM the purge makes anyway (docs/measurements.md, session 29, purge29). Not a test.

    PYTHONPATH=src python tests/purge29/measure_audit_sqlite.py [events]

A file with 2,000 records of 50 users and ``events`` audit events (inserted directly; all
of the tenant's, or 1 in 10 and the rest another tenant's; 1 in 50 of carol's), then: the
redaction's read of the log (by ``audit_log_tenant_at`` as until session 29, and in the
table's order, ``NOT INDEXED``, as since),
the same read on a copy with an index on (tenant, user) and one on (tenant, actor), the
VACUUM alone (``compact``) and a whole purge of carol. Medians of 5 (the reads) or 3.
"""

from __future__ import annotations

import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from memstrata import Memory, Scope

READ = "SELECT seq, user IS ?2 FROM audit_log WHERE tenant = ?1 AND (user = ?2 OR actor = ?2)"
SCAN = READ.replace("FROM audit_log", "FROM audit_log NOT INDEXED")  # session 29's read


def _fill(path: Path, events: int, share: int) -> None:
    with Memory(f"sqlite:///{path}", embedder="hashing", background=False) as mem:
        for u in range(50):
            scope = Scope("acme", f"carol{u}" if u else "carol")
            for n in range(40):
                mem.add(scope, f"note {n} of user {u} about gardens", dedup=False)
    c = sqlite3.connect(path)
    rows = [
        (
            uuid.uuid4().hex,
            "acme" if n % share == 0 else "globex",
            "carol" if n % 50 == 0 else f"carol{n % 50}",
            "library",
            "delete",
            f"2026-01-01T00:00:{n % 60:02d}.{n:06d}+00:00",
            f'["id-{n}"]',
        )
        for n in range(events)
    ]
    c.executemany(
        "INSERT INTO audit_log (id, tenant, user, actor, action, at, record_ids, details) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, '{}')",
        rows,
    )
    c.commit()
    c.close()


def _read(path: Path, sql: str = READ) -> float:
    times = []
    for _ in range(5):
        c = sqlite3.connect(path)
        t0 = time.perf_counter()
        c.execute(sql, ("acme", "carol")).fetchall()
        times.append(time.perf_counter() - t0)
        c.close()
    return statistics.median(times)


def main(events: int, share: int) -> None:
    base = Path(tempfile.mkdtemp(prefix="memstrata-audit-"))
    try:
        path = base / "m.db"
        _fill(path, events, share)
        size = path.stat().st_size
        plain = _read(path)
        scan = _read(path, SCAN)
        indexed = base / "i.db"
        shutil.copy(path, indexed)
        c = sqlite3.connect(indexed)
        c.execute("CREATE INDEX audit_log_user ON audit_log (tenant, user)")
        c.execute("CREATE INDEX audit_log_actor ON audit_log (tenant, actor)")
        c.commit()
        c.close()
        with_index = _read(indexed)
        vacuums, purges = [], []
        for _ in range(3):
            run = base / "r.db"
            shutil.copy(path, run)
            with Memory(f"sqlite:///{run}", embedder="hashing", background=False) as mem:
                t0 = time.perf_counter()
                mem.compact()
                vacuums.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                report = mem.purge(Scope("acme", "carol"))
                purges.append(time.perf_counter() - t0)
                assert report.remaining == 0
            run.unlink()
        print(
            f"events={events} (1 in {share} the tenant's) file={size / 1e6:.1f} MB: read by "
            f"audit_log_tenant_at {plain * 1e3:.1f} ms, in table order {scan * 1e3:.1f} ms, "
            f"with an index {with_index * 1e3:.2f} ms; VACUUM alone "
            f"{statistics.median(vacuums) * 1e3:.0f} ms; whole purge "
            f"{statistics.median(purges) * 1e3:.0f} ms"
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    for arg in sys.argv[1:] or ["10000", "100000"]:
        for share in (1, 10):
            main(int(arg), share)
