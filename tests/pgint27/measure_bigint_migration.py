"""How long schema 18 (BIGINT counts) takes on a PostgreSQL store of N records (default
100,000; some with archived versions, some jobs): ``python tests/pgint27/measure_bigint_migration.py
[N]`` with ``PYTHONPATH=src:tests``. Starts the suite's pgserver (or uses
``MEMSTRATA_TEST_POSTGRES_URL``), fills a schema, turns it back into schema 17 and times the
open that migrates it (three runs)."""

from __future__ import annotations

import sys
import time
from dataclasses import replace

import psycopg
from psycopg import sql

import servers
from memstrata import Memory, Scope
from memstrata.store.base import RecordWrite

# about 400 characters per record, as a chat turn or a note (the rewrite copies every byte)
_FILLER = " ".join(f"word{k}" for k in range(60))
WIDENED = (
    ("records", "version"),
    ("records", "access_count"),
    ("record_history", "version"),
    ("jobs", "attempts"),
)


def _run(server: servers.PgServer, schema: str, *statements: str) -> None:
    with psycopg.connect(server.admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        for s in statements:
            conn.execute(s.encode())


def main(n: int) -> None:
    server = servers.postgres()
    url = server.url()
    schema = url.rsplit("schema=", 1)[1]
    try:
        mem = Memory(url, embedder="hashing", background=False)
        first = mem.add(Scope("acme", "u0", session="s"), "a note about the harbour")
        t0 = time.perf_counter()
        for start in range(0, n, 5000):
            mem.store.insert(
                [
                    RecordWrite(
                        replace(
                            first,
                            id=f"r{i}",
                            user=f"u{i % 100}",
                            content=replace(
                                first.content, raw=f"note {i} about harbour {i % 977} " + _FILLER
                            ),
                        ),
                        None,
                        (),
                    )
                    for i in range(start, min(n, start + 5000))
                ]
            )
        mem.close()
        print(f"filled {n:,} records in {time.perf_counter() - t0:.1f} s")
        _run(
            server,
            schema,
            "INSERT INTO record_history (seq, version, delta) "
            "SELECT seq, 1, '\\x00'::bytea FROM records WHERE seq % 5 = 0",
            'INSERT INTO jobs (id, kind, tenant, "user", payload, created_at, run_after, '
            "status, attempts) SELECT 'j' || g, 'ingest', 'acme', 'u0', '{}', "
            "'2026-01-01T00:00:00', '2026-01-01T00:00:00', 'done', 1 "
            "FROM generate_series(1, 1000) g",
            "VACUUM ANALYZE records",
        )
        with psycopg.connect(server.admin_url, autocommit=True) as conn:
            size = conn.execute(
                "SELECT pg_total_relation_size(%s) / 1e6", (f"{schema}.records",)
            ).fetchone()
        print(f"records: {size[0] if size else 0:.0f} MB with its indexes")
        for run in range(3):
            _run(
                server,
                schema,
                *(f"ALTER TABLE {t} ALTER COLUMN {c} TYPE INTEGER" for t, c in WIDENED),
                "DELETE FROM schema_migrations WHERE version >= 18",
                "CHECKPOINT",
            )
            t0 = time.perf_counter()
            Memory(url, embedder="hashing", background=False).close()
            opened = time.perf_counter() - t0
            t0 = time.perf_counter()
            Memory(url, embedder="hashing", background=False).close()
            plain = time.perf_counter() - t0
            print(
                f"run {run + 1}: open with the migration {opened:.2f} s, "
                f"an open with nothing to migrate {plain:.2f} s"
            )
    finally:
        server.drop(schema)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
