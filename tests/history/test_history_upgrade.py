"""Stores written at schema v6 migrate without losing a version.

SQLite v6 kept the first delta format (``legacy_history_v6.py`` is the code that wrote it);
PostgreSQL v6 kept a full copy per version in ``record_versions``. Each store is built as v6
left it: the v1–v6 migration steps, then records and their history in the v6 form. Opening
it runs every later step (whatever their numbers)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import psycopg
from psycopg import sql

import servers
from memstrata.records import MemoryRecord, RecordStatus
from memstrata.scope import Scope
from memstrata.store import open_store
from memstrata.store.postgres import migrations as pg_migrations
from memstrata.store.sqlite import migrations as sqlite_migrations
from memstrata.store.sqlite.codec import COLUMNS, encode_record

from . import legacy_history_v6 as legacy
from .kit import T0, cluster_versions, fact_versions

ME = Scope("t1", "u1")


def _histories() -> list[list[MemoryRecord]]:
    """A cluster (sliding provenance, moving centroid) and a fact deleted at the end."""
    fact = [replace(v, id="fact-1") for v in fact_versions(40)]
    gone = replace(fact[-1], version=41, status=RecordStatus.DELETED, deleted_at=T0, updated_at=T0)
    return [cluster_versions(60), [*fact, gone]]


def _write_v6_sqlite(path: Path, histories: Sequence[Sequence[MemoryRecord]]) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    for version, step in sqlite_migrations.MIGRATIONS:
        if version > 6:
            break
        if isinstance(step, str):
            for statement in sqlite_migrations._statements(step):
                conn.execute(statement)
        else:
            step(conn)  # v3 converts record_versions, empty here
    conn.execute("PRAGMA user_version = 6")
    cols = ", ".join(COLUMNS)
    marks = ", ".join("?" * len(COLUMNS))
    for versions in histories:
        rows = [dict(zip(COLUMNS, encode_record(v), strict=True)) for v in versions]
        seq = conn.execute(
            f"INSERT INTO records ({cols}) VALUES ({marks})", tuple(rows[-1].values())
        ).lastrowid
        for old, new in zip(rows[:-1], rows[1:], strict=True):
            conn.execute(
                "INSERT INTO record_history (seq, version, delta) VALUES (?, ?, ?)",
                (seq, old["version"], legacy.encode_delta(legacy.reverse_delta(old, new))),
            )
    conn.close()


def test_a_v6_sqlite_file_migrates_its_deltas_without_loss(tmp_path: Path) -> None:
    path = tmp_path / "v6.db"
    histories = _histories()
    _write_v6_sqlite(path, histories)
    conn = sqlite3.connect(path)
    before = conn.execute("SELECT sum(length(delta)) FROM record_history").fetchone()[0]
    conn.close()

    store = open_store(f"sqlite:///{path}")
    try:
        for versions in histories:
            assert store.history(ME, versions[-1].id) == versions
    finally:
        store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == sqlite_migrations.SCHEMA_VERSION
    after, count, old_format = conn.execute(
        "SELECT sum(length(delta)), count(*), sum(substr(delta, 1, 1) = x'78') FROM record_history"
    ).fetchone()
    conn.close()
    assert count == 59 + 40 and old_format == 0
    assert after < before / 2, (before, after)
    again = open_store(f"sqlite:///{path}")  # and it opens again without migrating twice
    try:
        assert again.history(ME, "fact-1") == histories[1]
    finally:
        again.close()


def _write_v6_postgres(schema: str, histories: Sequence[Sequence[MemoryRecord]]) -> None:
    cols = ", ".join(f'"{c}"' if c == "user" else c for c in COLUMNS)
    marks = ", ".join(["%s"] * len(COLUMNS))
    with psycopg.connect(servers.postgres().admin_url, autocommit=True) as conn:
        pg_migrations.check_pgvector(conn, "the test server")
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema)))
        conn.execute(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, "
            "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        for version, step in pg_migrations.MIGRATIONS:
            if version > 6:
                break
            assert isinstance(step, str)
            conn.execute(step.encode())
            conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
        for versions in histories:
            conn.execute(
                f"INSERT INTO records ({cols}) VALUES ({marks})".encode(),
                encode_record(versions[-1]),
            )
            for old in versions[:-1]:
                conn.execute(
                    f"INSERT INTO record_versions ({cols}) VALUES ({marks})".encode(),
                    encode_record(old),
                )


def test_a_v6_postgresql_schema_turns_its_copies_into_deltas(pg_url: str) -> None:
    schema = pg_url.rsplit("schema=", 1)[1].split("&")[0]
    histories = _histories()
    _write_v6_postgres(schema, histories)

    store = open_store(pg_url)
    try:
        for versions in histories:
            assert store.history(ME, versions[-1].id) == versions
    finally:
        store.close()
    with psycopg.connect(servers.postgres().admin_url, autocommit=True) as conn:
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (schema,),
            )
        }
        found = conn.execute(
            sql.SQL("SELECT count(*), max(version) FROM {}.record_history").format(
                sql.Identifier(schema)
            )
        ).fetchone()
        applied = conn.execute(
            sql.SQL("SELECT max(version) FROM {}.schema_migrations").format(sql.Identifier(schema))
        ).fetchone()
    assert "record_versions" not in tables
    assert found is not None and found[0] == 59 + 40
    assert applied is not None and applied[0] == pg_migrations.SCHEMA_VERSION
