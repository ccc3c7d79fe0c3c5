"""Schema 18 on PostgreSQL: the counts data or use drive past 2**31 - 1 (a record's version
and access count, its archived versions', a job's attempts) become BIGINT. A store left by
schema 17 is migrated on open with its rows, indexes and triggers as a fresh store has them;
a process killed in the middle of the migration leaves schema 17 whole, and the next open
finishes it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from typing import Any

import psycopg
from psycopg import sql

import servers
from memstrata import Memory, Scope
from memstrata.store.postgres import schema
from memstrata.store.postgres.schema import MIGRATIONS, SCHEMA_VERSION
from store.reterm_files import pg_query, pg_schema, pg_version

U = Scope("acme", "u1", session="s1")
# this step's number (18 on its branch; a merge may renumber it): found by its text
V18 = next(v for v, step in MIGRATIONS if step == schema._V18_BIGINT_COUNTS)
WIDENED = {
    ("records", "version"),
    ("records", "access_count"),
    ("record_history", "version"),
    ("jobs", "attempts"),
}


def _columns(url: str) -> dict[tuple[str, str], str]:
    rows = pg_query(
        url,
        "SELECT table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = current_schema()",
    )
    return {(str(t), str(c)): str(d) for t, c, d in rows}


def _indexes_and_triggers(url: str) -> tuple[set[tuple[str, str, bool]], set[str]]:
    indexes = pg_query(
        url,
        "SELECT c.relname, pg_get_indexdef(i.indexrelid), i.indisvalid FROM pg_index i "
        "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema()",
    )
    triggers = pg_query(
        url,
        "SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND NOT t.tgisinternal",
    )
    return {(str(a), str(b), bool(v)) for a, b, v in indexes}, {str(t) for (t,) in triggers}


def _filled(url: str) -> str:
    """A store with records, an archived version, a job; the id of one record."""
    mem = Memory(url, embedder="hashing", background=False)
    try:
        rid = mem.add(U, "a note about the harbour in Lisbon").id
        mem.add_message(U, "user", "we sailed from the harbour at dawn")
        mem.update(U, rid, expected_version=1, content="a note about the harbour in Porto")
        return rid
    finally:
        mem.close()


def _run(url: str, statement: str, *args: object) -> None:
    with psycopg.connect(servers.postgres().admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(pg_schema(url))))
        conn.execute(statement.encode(), args)


def _as_schema_17(url: str) -> None:
    """The columns as schema 17 made them (INTEGER), and its version row the last."""
    for table, column in sorted(WIDENED):
        _run(url, f"ALTER TABLE {table} ALTER COLUMN {column} TYPE INTEGER")
    _run(url, "DELETE FROM schema_migrations WHERE version >= %s", V18)


def test_a_schema_17_store_gets_bigint_counts_like_a_fresh_one(pg_server: Any) -> None:
    url, fresh = pg_server.url(), pg_server.url()
    try:
        rid = _filled(url)
        Memory(fresh, embedder="hashing", background=False).close()
        want_columns = _columns(fresh)
        assert {want_columns[c] for c in WIDENED} == {"bigint"}
        want_indexes, want_triggers = _indexes_and_triggers(url)
        _as_schema_17(url)
        assert {_columns(url)[c] for c in WIDENED} == {"integer"}
        _run(
            url,
            "UPDATE records SET version = 2147483647, access_count = 2147483647 WHERE id = %s",
            rid,
        )
        rows = pg_query(url, "SELECT id, raw, version, access_count FROM records ORDER BY seq")
        mem = Memory(url, embedder="hashing", background=False)
        try:
            assert pg_version(url) == SCHEMA_VERSION >= V18
            assert _columns(url) == want_columns
            assert _indexes_and_triggers(url) == (want_indexes, want_triggers)
            assert all(valid for _, _, valid in want_indexes)
            assert (
                pg_query(url, "SELECT id, raw, version, access_count FROM records ORDER BY seq")
                == rows
            )
            # what schema 17 could not do at its edge ("integer out of range")
            assert rid in {h.record.id for h in mem.search(U, "harbour Porto")}
            mem.flush()
            assert mem.get(U, rid).access_count == 2**31
            assert mem.delete(U, rid).status == "deleted"
            assert mem.get(U, rid, include_deleted=True).version == 2**31
            assert len(mem.history(U, rid)) == 3  # the archived versions survived
        finally:
            mem.close()
    finally:
        pg_server.drop(pg_schema(url))
        pg_server.drop(pg_schema(fresh))


_OPEN = """
import sys
from memstrata.store import open_store
open_store(sys.argv[1]).close()
"""


def test_a_migration_killed_midway_leaves_schema_17_and_the_next_open_ends_it(
    pg_server: Any,
) -> None:
    url = pg_server.url()
    schema = pg_schema(url)
    try:
        _filled(url)
        _as_schema_17(url)
        before = pg_query(url, "SELECT id, raw, version, access_count FROM records ORDER BY seq")
        with psycopg.connect(pg_server.admin_url) as holder:  # a transaction: holds the lock
            # the migration widens records and record_history, then waits for jobs
            holder.execute(
                sql.SQL("LOCK TABLE {}.jobs IN ACCESS SHARE MODE").format(sql.Identifier(schema))
            )
            proc = subprocess.Popen([sys.executable, "-c", _OPEN, url])
            backend = None
            deadline = time.monotonic() + 60
            while backend is None and time.monotonic() < deadline:
                with psycopg.connect(pg_server.admin_url, autocommit=True) as look:
                    found = look.execute(
                        "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                        "AND query LIKE %s",
                        ("%ALTER TABLE jobs ALTER COLUMN attempts TYPE BIGINT%",),
                    ).fetchone()
                backend = found[0] if found else None
                time.sleep(0.05)
            assert backend is not None, "the migration never reached jobs"
            proc.send_signal(signal.SIGKILL)  # kill -9 in the middle of the migration
            assert proc.wait(timeout=30) == -signal.SIGKILL
            holder.rollback()  # the lock goes; the orphaned backend finds its client gone
        with psycopg.connect(pg_server.admin_url, autocommit=True) as look:
            deadline = time.monotonic() + 30
            while look.execute(
                "SELECT 1 FROM pg_stat_activity WHERE pid = %s", (backend,)
            ).fetchone():
                assert time.monotonic() < deadline, "the killed migration's backend stayed"
                time.sleep(0.05)
        assert pg_version(url) == V18 - 1
        assert {_columns(url)[c] for c in WIDENED} == {"integer"}  # records' ALTER undone too
        assert (
            pg_query(url, "SELECT id, raw, version, access_count FROM records ORDER BY seq")
            == before
        )
        Memory(url, embedder="hashing", background=False).close()  # the next open ends it
        assert pg_version(url) == SCHEMA_VERSION
        assert {_columns(url)[c] for c in WIDENED} == {"bigint"}
    finally:
        pg_server.drop(schema)
