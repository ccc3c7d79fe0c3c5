"""An upgrade of a PostgreSQL store from schema 29 lets writes go on while it builds step
30's index and back-fills step 31's table (pg33), and is whole whatever stops it.

Step 30's index was built inside the migration's transaction (every write to ``jobs``
waited until the whole migration committed), and step 31's back-fill read every history
in it, after the trigger had locked ``records`` against writes (3.3 s for 10,000
histories, docs/measurements.md, session 33). Now the index is built CONCURRENTLY and the
back-fill made before that transaction (schema._before_lock, backfill.py), and the step
fills again only the records changed meanwhile.

The store at schema 29 is made from today's: steps 30-31's objects dropped, the version
rows above 29 deleted (as tests/pg32 does for step 31)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest

from memstrata import Memory, Message, Scope
from memstrata.records import Role
from memstrata.store import open_store
from memstrata.store.postgres import backfill
from memstrata.store.postgres.schema import SCHEMA_VERSION
from memstrata.store.sqlite import history
from memstrata.store.types import RecordWrite
from servers import postgres
from store.reterm_files import _pg, pg_schema, pg_version

SRC = str(Path(__file__).resolve().parents[2] / "src")
TESTS = str(Path(__file__).resolve().parents[1])


def _store(url: str, summaries: int = 6) -> tuple[Memory, Scope, list[str]]:
    """An open memory of 30 turns and ``summaries`` summaries, each replaced twice with
    other turns as its sources (two archived versions naming them), a few done jobs."""
    mem = Memory(url, embedder="hashing", background=False)
    scope = Scope("acme", "alice", session="s1")
    owner = scope.user_scope
    said = [Message(Role.USER, f"turn {i}") for i in range(30)]
    ids = [r.id for r in mem.add_messages(scope, said)]
    for k in range(summaries):
        r = mem.add(owner, f"summary {k}", type="summary", dedup=False)
        for step in (0, 1):
            _cite(mem, owner, r.id, ids[(3 * k + step) % 30 : (3 * k + step) % 30 + 3])
        ids.append(r.id)
    with _pg(url) as conn:
        conn.execute(
            'INSERT INTO jobs (id, kind, tenant, "user", payload, created_at, run_after, '
            "status, attempts) SELECT 'done-' || i, 'ingest', 'acme', 'alice', '{}', "
            "'2026-11-01', '2026-11-01', 'done', 1 FROM generate_series(1, 50) i"
        )
    return mem, owner, ids


def _cite(mem: Memory, owner: Scope, rid: str, sources: list[str]) -> None:
    r = mem.store.get(owner, rid, include_deleted=True)
    new = replace(r, version=r.version + 1, source_ids=tuple(sources))
    mem.store.replace(owner, RecordWrite(new, None, ()), expected_version=r.version)


def _as_29(url: str) -> None:
    with _pg(url) as conn:
        conn.execute("DROP INDEX IF EXISTS jobs_done")
        conn.execute("DROP TRIGGER IF EXISTS record_past_links ON records")
        conn.execute("DROP FUNCTION IF EXISTS record_past_links_keep()")
        conn.execute("DROP TABLE IF EXISTS record_past_links")
        conn.execute("DELETE FROM schema_migrations WHERE version > 29")


def _links(url: str) -> set[tuple[str, int]]:
    with _pg(url) as conn:
        return {(str(i), int(s)) for i, s in conn.execute("SELECT id, seq FROM record_past_links")}


def _refilled(url: str) -> set[tuple[str, int]]:
    """What a back-fill of every history makes of the store as it is (rolled back)."""
    with _pg(url) as conn:
        conn.autocommit = False
        with conn.cursor() as cur:
            cur.execute("TRUNCATE record_past_links")
            backfill.fill(cur)
            cur.execute("SELECT id, seq FROM record_past_links")
            out = {(str(i), int(s)) for i, s in cur.fetchall()}
        conn.rollback()
    return out


def _valid(url: str) -> list[bool]:
    return [
        bool(v)
        for (v,) in postgres_rows(
            "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relname = 'jobs_done' AND n.nspname = %s",
            pg_schema(url),
        )
    ]


def postgres_rows(query: str, *args: object) -> list[tuple[Any, ...]]:
    with psycopg.connect(postgres().admin_url) as conn:
        return conn.execute(query.encode(), args).fetchall()


def test_writes_go_on_while_the_upgrade_reads_the_histories(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While step 31's back-fill decodes the histories, a write to ``jobs`` and one to
    ``records`` (as another process of an older memstrata makes them, with a lock timeout
    of 2 s) are made. Before pg33 both waited for the migration's commit (step 30's index
    and step 31's trigger lock those tables until then) and timed out."""
    mem, owner, ids = _store(pg_url)
    mem.close()
    _as_29(pg_url)
    outcomes: list[object] = []
    decode = history.decode_delta

    def write_meanwhile(blob: bytes) -> Any:
        if not outcomes:
            with _pg(pg_url) as conn:
                conn.execute("SET lock_timeout = '2s'")
                for statement in (
                    'INSERT INTO jobs (id, kind, tenant, "user", payload, created_at, '
                    "run_after, status, attempts) VALUES ('meanwhile', 'ingest', 'acme', "
                    "'alice', '{}', '2026-11-29', '2026-11-29', 'pending', 0)",
                    "UPDATE records SET access_count = access_count + 1 "
                    "WHERE seq = (SELECT min(seq) FROM records)",
                ):
                    try:
                        conn.execute(statement)
                        outcomes.append("written")
                    except psycopg.errors.LockNotAvailable as exc:
                        outcomes.append(f"waited: {exc}")
        return decode(blob)

    monkeypatch.setattr(history, "decode_delta", write_meanwhile)
    open_store(pg_url).close()
    monkeypatch.undo()
    assert outcomes == ["written", "written"]
    assert pg_version(pg_url) == SCHEMA_VERSION
    assert _valid(pg_url) == [True]
    assert _links(pg_url) == _refilled(pg_url) != set()


def test_versions_archived_during_the_back_fill_are_found(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process opened before (at this version: it writes on while the back-fill runs)
    archives versions of records the back-fill read already and of others: the step
    fills those again in its transaction, so the table is what a back-fill of every
    history makes."""
    mem, owner, ids = _store(pg_url, summaries=12)
    _as_29(pg_url)
    turns, summaries = ids[:30], ids[30:]
    done: list[str] = []
    decode = history.decode_delta
    monkeypatch.setattr(backfill, "PART", 3)

    def archive_meanwhile(blob: bytes) -> Any:
        if not done:
            done.append("yes")
            for rid in (summaries[0], summaries[-1]):  # one read already, one not yet
                _cite(mem, owner, rid, [turns[29]])
                _cite(mem, owner, rid, [turns[28]])  # the version citing turn 29 archived
        return decode(blob)

    monkeypatch.setattr(history, "decode_delta", archive_meanwhile)
    try:
        open_store(pg_url).close()
    finally:
        monkeypatch.undo()
        mem.close()
    assert done
    links = _links(pg_url)
    assert links == _refilled(pg_url)
    schema = pg_schema(pg_url)
    query = f'SELECT id, seq FROM "{schema}".records WHERE id = ANY(%s)'
    seqs = dict(postgres_rows(query, summaries))
    assert (turns[29], seqs[summaries[0]]) in links  # archived during the back-fill
    assert (turns[29], seqs[summaries[-1]]) in links


def test_an_index_left_invalid_is_built_again(pg_url: str) -> None:
    """A build of ``jobs_done`` interrupted before (an invalid index): the upgrade builds
    it again. Before pg33, step 30's ``IF NOT EXISTS`` kept the invalid one (never used)."""
    mem, _, _ = _store(pg_url)
    mem.close()
    _as_29(pg_url)
    with _pg(pg_url) as conn:
        conn.execute("CREATE INDEX jobs_done ON jobs (run_after) WHERE status = 'done'")
    postgres_rows_exec(
        "UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass(%s)",
        f'"{pg_schema(pg_url)}".jobs_done',
    )
    assert _valid(pg_url) == [False]
    open_store(pg_url).close()
    assert _valid(pg_url) == [True]
    assert pg_version(pg_url) == SCHEMA_VERSION


def postgres_rows_exec(query: str, *args: object) -> None:
    with psycopg.connect(postgres().admin_url, autocommit=True) as conn:
        conn.execute(query.encode(), args)


KILLED = """
import sys, time
sys.path[:0] = [{src!r}]
from memstrata.store.postgres import backfill
from memstrata.store import open_store
backfill.PART = 2
inner = backfill._part
parts = []
def slow(cur, seqs, seen):
    inner(cur, seqs, seen)
    parts.append(seqs)
    if len(parts) == 2:
        open({marker!r}, "w").close()
        time.sleep(120)
backfill._part = slow
open_store({url!r})
"""


def test_an_upgrade_killed_in_the_back_fill_is_made_again(pg_url: str, tmp_path: Path) -> None:
    """kill -9 of the upgrading process after two parts of the back-fill: the store is at
    schema 29 with a part of the table; the next open upgrades it whole."""
    mem, _, _ = _store(pg_url)
    mem.close()
    _as_29(pg_url)
    marker = tmp_path / "in-the-back-fill"
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED.format(src=SRC, marker=str(marker), url=pg_url)],
        env={**os.environ, "PYTHONPATH": SRC},
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert child.poll() is None, "the upgrading process ended on its own"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    assert pg_version(pg_url) == 29
    assert 0 < len(_links(pg_url)) < len(_refilled(pg_url))
    open_store(pg_url).close()
    assert pg_version(pg_url) == SCHEMA_VERSION
    assert _valid(pg_url) == [True]
    assert _links(pg_url) == _refilled(pg_url)


def test_two_processes_upgrading_at_once(pg_url: str) -> None:
    """Two opens upgrading one store at once: one builds and back-fills while the other
    asks for the lock; both open it, and it is upgraded once."""
    mem, _, _ = _store(pg_url)
    mem.close()
    _as_29(pg_url)
    errors: list[BaseException] = []

    def opened() -> None:
        try:
            open_store(pg_url).close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=opened) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    assert pg_version(pg_url) == SCHEMA_VERSION
    assert _valid(pg_url) == [True]
    assert _links(pg_url) == _refilled(pg_url)
    rows = postgres_rows(
        f'SELECT version FROM "{pg_schema(pg_url)}".schema_migrations WHERE version > 29'
    )
    assert sorted(v for (v,) in rows) == list(range(30, SCHEMA_VERSION + 1))


def test_the_async_store_upgrades_alike(pg_url: str) -> None:
    """The async store (the server's) runs the same upgrade: the index, the back-fill."""
    import asyncio

    from memstrata.aio.stores import open_store as open_async

    mem, _, _ = _store(pg_url)
    mem.close()
    _as_29(pg_url)

    async def opened() -> None:
        store = await open_async(pg_url)
        await store.aclose()

    asyncio.run(opened())
    assert pg_version(pg_url) == SCHEMA_VERSION
    assert _valid(pg_url) == [True]
    assert _links(pg_url) == _refilled(pg_url) != set()
