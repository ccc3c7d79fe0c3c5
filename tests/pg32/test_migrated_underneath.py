"""A PostgreSQL store migrated by a newer memstrata while this process has it open (pg32).

Opening a schema of a newer version is refused (``SchemaVersionError``); a process that
opened it before went on writing after another process migrated it, rows the newer steps
do not expect, without a word (SQLite: session 31, tests/audit31/test_migrated_underneath.py).
Every write transaction now reads the schema's version with its ``BEGIN``, under a shared
lock that a migration holds exclusively (store/postgres/migrated.py): a write after the
migration, or waiting for one under way, is refused and nothing of it is written.

The newer memstrata is a real second process: this memstrata with one more step
(``ALTER TABLE records ADD COLUMN``) run by ``schema.migrate``, as ``memstrata migrate``
of a newer release would."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import textwrap
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from memstrata import AsyncMemory, Memory, SchemaVersionError, Scope
from memstrata.jobs import Fence, Job, fenced
from memstrata.store import open_store
from memstrata.store.postgres.migrated import schema_key
from memstrata.store.postgres.schema import _LOCK_KEY, SCHEMA_VERSION
from servers import postgres

ALICE = Scope("acme", "alice", session="s1")
SRC = str(Path(__file__).resolve().parents[2] / "src")

_NEWER = textwrap.dedent(
    """
    import sys
    import psycopg
    from memstrata.store.postgres import schema
    schema.MIGRATIONS.append(
        (schema.SCHEMA_VERSION + 1, "ALTER TABLE records ADD COLUMN pg32_newer INTEGER")
    )
    schema.SCHEMA_VERSION += 1
    with psycopg.connect(sys.argv[1], autocommit=True) as conn:
        print(schema.migrate(conn, sys.argv[2], "newer"))
    """
)


def _schema(url: str) -> str:
    return parse_qs(urlsplit(url).query)["schema"][0]


def _conninfo(url: str) -> str:
    """The server's own URL (the suite's server: tests/servers.py)."""
    return postgres().admin_url


def _migrate_in_another_process(url: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _NEWER, _conninfo(url), _schema(url)],
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(SCHEMA_VERSION)  # it found this one's version


def _count(url: str, table: str) -> int:
    with psycopg.connect(_conninfo(url), autocommit=True) as conn:
        row = conn.execute(f'SELECT count(*) FROM "{_schema(url)}".{table}').fetchone()
        assert row is not None
        return int(row[0])


def test_a_write_after_a_newer_migration_is_refused(pg_url: str) -> None:
    mem = Memory(pg_url, embedder="hashing", background=False)
    try:
        note = mem.add(ALICE, "the glaze was cobalt blue")
        _migrate_in_another_process(pg_url)
        for write in (
            lambda: mem.add(ALICE, "another note"),
            lambda: mem.add_message(ALICE, "user", "a turn"),
            lambda: mem.delete(ALICE, note.id),
            lambda: mem.key.set(ALICE, "never nuts", priority=3),
        ):
            with pytest.raises(SchemaVersionError, match="restart this process") as err:
                write()
            assert f"schema version {SCHEMA_VERSION + 1}" in str(err.value)
            assert "nothing of this call was written" in str(err.value)
        assert _count(pg_url, "records") == 1
        assert mem.get(ALICE, note.id).content.raw == "the glaze was cobalt blue"  # reads go on
    finally:
        # buffered counters, if any, are refused too
        with contextlib.suppress(SchemaVersionError):
            mem.close()
    with pytest.raises(SchemaVersionError, match="only knows up to"):  # as before: opening
        Memory(pg_url, embedder="hashing", background=False)


def test_a_jobs_write_and_a_write_behind_are_refused_too(pg_url: str) -> None:
    """The two other ways a write transaction begins: under a job's claim (its check goes
    with the ``BEGIN``) and behind a search (counters, cache entries: pipelined)."""
    mem = Memory(pg_url, embedder="hashing", background=False)
    store = mem._store  # noqa: SLF001 - the store's own write paths
    try:
        note = mem.add(ALICE, "the glaze was cobalt blue")
        now = datetime.now(UTC)
        store.enqueue([Job("j1", "k", "acme", "alice", {}, created_at=now, run_after=now)])
        (job,) = store.claim_jobs(now, limit=1, lease_seconds=600)
        assert job.lease_token is not None
        counters = _count(pg_url, "counters")
        _migrate_in_another_process(pg_url)
        fence = Fence(job.id, job.lease_token, lambda: None)
        with pytest.raises(SchemaVersionError), fenced(fence):
            store.finish_job(job.id, job.lease_token)
        with pytest.raises(SchemaVersionError):
            store.add_counts(ALICE.user_scope, "shown", {note.id: 2})
        assert [j.status for j in store.list_jobs("acme", "alice")] == ["running"]
        assert _count(pg_url, "counters") == counters
    finally:
        with contextlib.suppress(SchemaVersionError):
            mem.close()


def test_a_write_waits_for_a_migration_under_way_then_is_refused(pg_url: str) -> None:
    """The race the check must not lose: a write begun while a migration runs. Its
    version read comes after the migration's lock, so it reads the migration's commit."""
    mem = Memory(pg_url, embedder="hashing", background=False)
    outcome: list[BaseException | str] = []
    try:
        mem.add(ALICE, "first")
        schema = _schema(pg_url)
        with psycopg.connect(_conninfo(pg_url)) as newer:  # a migration's transaction
            newer.execute(
                "SELECT pg_advisory_xact_lock(%s), pg_advisory_xact_lock(%s)",
                (_LOCK_KEY, schema_key(schema)),
            )
            newer.execute(f'ALTER TABLE "{schema}".records ADD COLUMN pg32_newer INTEGER')
            newer.execute(
                f'INSERT INTO "{schema}".schema_migrations (version) VALUES (%s)',
                (SCHEMA_VERSION + 1,),
            )

            def write() -> None:
                try:
                    mem.add(ALICE, "written while it migrates")
                    outcome.append("written")
                except BaseException as exc:  # noqa: BLE001 - the outcome is the assertion
                    outcome.append(exc)

            writer = threading.Thread(target=write)
            writer.start()
            time.sleep(1.0)
            waited = writer.is_alive()
            newer.commit()
        writer.join(60)
        assert outcome and isinstance(outcome[0], SchemaVersionError), outcome
        assert waited  # it waited for the migration rather than writing before it
        assert _count(pg_url, "records") == 1
    finally:
        with contextlib.suppress(SchemaVersionError):
            mem.close()


def test_async_the_same(pg_url: str) -> None:
    async def run() -> None:
        mem = AsyncMemory(pg_url, embedder="hashing", background=False)
        try:
            await mem.add(ALICE, "first")
            _migrate_in_another_process(pg_url)
            with pytest.raises(SchemaVersionError, match="nothing of this call was written"):
                await mem.add(ALICE, "second")
        finally:
            with contextlib.suppress(SchemaVersionError):
                await mem.aclose()

    asyncio.run(run())
    assert _count(pg_url, "records") == 1


def test_other_schemas_and_an_open_at_this_version_do_not_wait(pg_url: str) -> None:
    """The version lock is the schema's own, and an open of a schema already at this
    version takes no lock: neither waits for a write transaction left open."""
    store = open_store(pg_url)
    try:
        with store._tx() as conn:  # noqa: SLF001 - a write transaction held open
            conn.execute("SELECT 1")
            again = open_store(pg_url)  # would wait forever for the transaction above
            again.close()
    finally:
        store.close()
