"""Step 32 under the migration lock before and after pg34: docs/measurements.md, session
34, pg34. Not a test: run it by hand.

    PYTHONPATH=src python tests/pg34/measure_step32.py ADMIN_URL RECORDS [ROUNDS]

A schema of its own (made by memstrata, dropped at the end) holding ``RECORDS`` records
(one note of 40 words copied by ``INSERT ... SELECT``, each with its own id: the re-term
reads ``lex_tokens`` only), then, alternately, the store marked as left by schema 31 and
opened (``schema.migrate``) as before pg34 (the pre-pass made a no-op: the step reads every
row in the transaction) and as now; printed: the time before the transaction (the
pre-pass) and in it (steps 32-34, step 32 alone)."""

from __future__ import annotations

import sys
import time
import uuid
from typing import Any

import psycopg

from memstrata import Memory, Scope
from memstrata.store.postgres import bounded, schema


def run(admin: str, name: str, mode: str) -> tuple[float, float, float]:
    took: dict[str, float] = {}
    steps = list(schema.MIGRATIONS)

    def timed(version: int, step: Any) -> Any:
        def inner(cur: Any) -> None:
            t = time.perf_counter()
            if isinstance(step, str):
                cur.execute(step.encode())
            else:
                step(cur)
            took[str(version)] = time.perf_counter() - t

        return inner

    schema.MIGRATIONS[:] = [(v, timed(v, s)) for v, s in steps]
    real_pre, real_lock = bounded.prebound, schema._before_lock
    if mode == "before":
        bounded.prebound = lambda conn: None  # type: ignore[assignment]

    def before_lock(conn: Any, sch: str) -> None:
        t = time.perf_counter()
        real_lock(conn, sch)
        took["pre"] = time.perf_counter() - t

    schema._before_lock = before_lock  # type: ignore[assignment]
    try:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DELETE FROM {name}.schema_migrations WHERE version > 31")
            t = time.perf_counter()
            schema.migrate(conn, name, "measure")
            total = time.perf_counter() - t
    finally:
        schema.MIGRATIONS[:] = steps
        bounded.prebound, schema._before_lock = real_pre, real_lock
    pre = took.get("pre", 0.0)
    return pre, total - pre, took["32"]


def main(admin: str, records: int, rounds: int) -> None:
    name = "m_" + uuid.uuid4().hex[:8]
    url = admin + ("&" if "?" in admin else "?") + "schema=" + name
    with Memory(url, embedder="hashing", background=False) as mem:
        words = " ".join(f"word{i} thing{i * 7}" for i in range(20))
        mem.add(Scope("t", "u"), f"a note about {words}")
    cols = [
        r[0]
        for r in psycopg.connect(admin)
        .execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = %s "
            "AND table_name = 'records' AND column_name NOT IN ('seq', 'id') "
            "AND is_generated = 'NEVER' ORDER BY ordinal_position",
            (name,),
        )
        .fetchall()
    ]
    listed = ", ".join(f'"{c}"' for c in cols)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"SET search_path = {name}, public")
        t = time.perf_counter()
        conn.execute(
            f"INSERT INTO records (id, {listed}) SELECT md5(g::text), {listed} FROM records r, "
            "generate_series(1, %s) g",
            (records - 1,),
        )
        conn.execute("VACUUM ANALYZE records")
        size = conn.execute("SELECT pg_size_pretty(pg_total_relation_size('records'))").fetchone()
        print(f"{records} records, {size[0] if size else '?'}, made in "
              f"{time.perf_counter() - t:.1f} s", flush=True)  # fmt: skip
    try:
        for _ in range(rounds):
            for mode in ("before", "after"):
                pre, tx, step = run(admin, name, mode)
                print(f"| {mode} | {pre:.2f} s | {tx:.2f} s | {step:.2f} s |", flush=True)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {name} CASCADE")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 2)
