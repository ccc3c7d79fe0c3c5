"""How long each PostgreSQL schema step after 29 takes on a large store, and how long
writers wait meanwhile (pg33) — docs/measurements.md, session 33, pg33. Not a test: run
it by hand, after big_store.py built the template.

    PYTHONPATH=SRC python tests/pg33/measure_steps.py [kill SECONDS]

A copy of ``big29`` (``CREATE DATABASE ... TEMPLATE``) is opened by ``schema.migrate`` as
``memstrata`` opens a store, with each step timed, while three writers run on connections
of their own, each a short transaction in a loop (a done job's insert; a record's
``access_count`` update — as a process of an older memstrata writes, with no lock of the
schema —; and the same job insert after the schema's shared version lock, as a process of
this memstrata writes): printed, each writer's longest transaction and how many it
committed. ``kill SECONDS`` runs the migration in a child process killed (SIGKILL) that
many seconds in, then migrates again in this one and checks the store."""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pg33.big_store import TEMPLATE, admin_url, db_url, store_url  # noqa: E402


def fresh(name: str) -> str:
    with psycopg.connect(admin_url(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
    return name


def drop(name: str) -> None:
    with psycopg.connect(admin_url(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def timed_steps() -> dict[int, float]:
    from memstrata.store.postgres import schema

    took: dict[int, float] = {}
    steps = list(schema.MIGRATIONS)

    def timer(version: int, step: Any) -> Any:
        def run(cur: Any) -> None:
            t = time.perf_counter()
            if isinstance(step, str):
                cur.execute(step.encode())
            else:
                step(cur)
            took[version] = time.perf_counter() - t

        return run

    schema.MIGRATIONS[:] = [(v, timer(v, s)) for v, s in steps]
    before = getattr(schema, "_before_lock", None)  # pg33: what runs before the lock
    if before is not None:

        def timed_before(*args: Any) -> None:
            t = time.perf_counter()
            before(*args)
            took[0] = time.perf_counter() - t

        schema._before_lock = timed_before
    return took


class Writer(threading.Thread):
    def __init__(self, url: str, kind: str) -> None:
        super().__init__(daemon=True)
        self.url, self.kind = url, kind
        self.times: list[tuple[float, float]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        from memstrata.store.postgres.migrated import schema_key

        key = schema_key("m")
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("SET search_path TO m, public")
            n = 0
            while not self.stop.is_set():
                n += 1
                t = time.perf_counter()
                try:
                    with conn.transaction():
                        if self.kind == "held job":
                            conn.execute("SELECT pg_advisory_xact_lock_shared(%s)", (key,))
                        if self.kind == "record":
                            conn.execute(
                                "UPDATE records SET access_count = access_count + 1 WHERE seq = %s",
                                (1 + (n * 7919) % 110_000,),  # a tenth with history
                            )
                        else:
                            conn.execute(
                                'INSERT INTO jobs (id, kind, tenant, "user", payload, '
                                "created_at, run_after, status, attempts) VALUES (%s, 'x', "
                                "'big', 'w', '{}', '2026-11-29', '2026-11-29', 'done', 1)",
                                (f"{self.kind}-{n}-{time.time_ns()}",),
                            )
                except psycopg.Error as exc:
                    print(self.kind, "failed:", exc, flush=True)
                    time.sleep(0.05)
                self.times.append((t, time.perf_counter() - t))
                time.sleep(0.01)


def migrate_once(url: str) -> tuple[int, float]:
    from memstrata.store.postgres import schema

    with psycopg.connect(url.split("&schema=")[0].split("?schema=")[0], autocommit=True) as c:
        t = time.perf_counter()
        found = schema.migrate(c, "m", "the big store")
        return found, time.perf_counter() - t


def check(url: str) -> None:
    from memstrata.store.postgres.schema import SCHEMA_VERSION

    with psycopg.connect(db_url(url), autocommit=True) as conn:
        conn.execute("SET search_path TO m, public")
        print(
            "version",
            conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0],
            "of",
            SCHEMA_VERSION,
        )
        print(
            "jobs_done valid:",
            conn.execute(
                "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.relname = 'jobs_done' AND n.nspname = 'm'"
            ).fetchall(),
        )
        print(
            "record_past_links rows:",
            conn.execute("SELECT count(*) FROM record_past_links").fetchone()[0],
            "digest:",
            conn.execute(
                "SELECT md5(string_agg(id || ':' || seq, ',' ORDER BY id, seq)) "
                "FROM record_past_links"
            ).fetchone()[0],
            "records with history:",
            conn.execute("SELECT count(DISTINCT seq) FROM record_history").fetchone()[0],
        )


def main() -> None:
    name = fresh("run33")
    url = store_url(name)
    if len(sys.argv) > 2 and sys.argv[1] == "kill":
        child = subprocess.Popen([sys.executable, __file__, "child", url], env=os.environ.copy())
        time.sleep(float(sys.argv[2]))
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        print("killed at", sys.argv[2], "s", flush=True)
        check(name)
        found, took = migrate_once(url)
        print(f"migrated again from {found}: {took:.2f} s")
        check(name)
        drop(name)
        return
    took = timed_steps()
    writers = [Writer(db_url(name), k) for k in ("job", "record", "held job")]
    for w in writers:
        w.start()
    time.sleep(1.0)
    t0 = time.perf_counter()
    found, total = migrate_once(url)
    t1 = time.perf_counter()
    time.sleep(1.0)
    for w in writers:
        w.stop.set()
        w.join()
    print(
        f"from {found}: total {total:.2f} s;",
        ", ".join(f"{v or 'before the lock'}: {s:.2f} s" for v, s in sorted(took.items())),
    )
    for w in writers:
        during = [d for s, d in w.times if s + d >= t0 and s <= t1]
        before = [d for s, d in w.times if s + d < t0]
        print(
            f"  writer {w.kind!r}: longest {max(during, default=0):.2f} s, "
            f"{len(during)} transactions during the migration, median before "
            f"{statistics.median(before) * 1e3 if before else 0:.1f} ms"
        )
    check(name)
    drop(name)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "child":
        migrate_once(sys.argv[2])
    else:
        main()
