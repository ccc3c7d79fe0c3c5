"""An import into PostgreSQL analyzes ``records`` inside its transaction once it has
inserted ``ANALYZE_IMPORT_AFTER`` rows more than the statistics know (pg34), so the read of
each later page's rows in ``insert_history`` is planned on the import's rows, not on a
table the planner takes for empty; and it never waits for another ANALYZE or VACUUM.

Seen from inside the import's transaction (a spy around ``dump.insert_history``, on the
real server): before pg34 ``records`` kept ``reltuples`` -1 until the import committed
(the background refresh runs on a connection of its own, which cannot see these rows), so
the first test fails before."""

from __future__ import annotations

import io
import threading
from typing import Any

import psycopg
import pytest

from memstrata import Memory, Message, Role, Scope
from memstrata.store.postgres import dump
from memstrata.store.postgres import store as pg_store
from store.reterm_files import _pg, pg_schema

ALICE = Scope("acme", "alice", session="s1")
TURNS = 1_500
ANALYZE_IMPORT_AFTER = getattr(pg_store, "ANALYZE_IMPORT_AFTER", 500)  # (500 before pg34)


@pytest.fixture(scope="module")
def export() -> str:
    """1,500 turns of one user, every fifth edited once (an earlier version each)."""
    mem = Memory("memory://", embedder="hashing", background=False)
    said = [Message(Role.USER, f"turn {i} about topic {i % 37}") for i in range(TURNS)]
    recs = []
    for at in range(0, TURNS, 500):
        recs += mem.add_messages(ALICE, said[at : at + 500])
    for rec in recs[::5]:
        mem.update(ALICE.user_scope, rec.id, expected_version=rec.version, content="edited")
    out = io.StringIO()
    mem.export_records(ALICE.user_scope, out)
    mem.close()
    return out.getvalue()


def test_the_import_reads_its_pages_with_statistics(
    pg_url: str, export: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At each ``insert_history`` call after the first ``ANALYZE_IMPORT_AFTER`` rows, the
    import's own connection sees statistics counting at least the rows it inserted."""
    assert TURNS > 2 * ANALYZE_IMPORT_AFTER
    seen: list[tuple[float, int]] = []
    inner = dump.insert_history

    def spy(c: Any, *args: Any, **kw: Any) -> None:
        row = c.execute(
            "SELECT reltuples, (SELECT count(*) FROM records) AS n FROM pg_class "
            "WHERE oid = 'records'::regclass"
        ).fetchone()
        seen.append((float(row["reltuples"]), int(row["n"])))
        inner(c, *args, **kw)

    monkeypatch.setattr(dump, "insert_history", spy)
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        report = mem.import_records(io.StringIO(export))
    assert report.imported == TURNS and report.versions == TURNS // 5
    later = [(tuples, n) for tuples, n in seen if n >= ANALYZE_IMPORT_AFTER]
    assert later, seen
    assert all(tuples >= ANALYZE_IMPORT_AFTER for tuples, _ in later), seen


def test_the_import_does_not_wait_for_a_vacuum_or_analyze(pg_url: str, export: str) -> None:
    """Another session holds ``records``' SHARE UPDATE EXCLUSIVE lock (a VACUUM, an
    ANALYZE, an index built CONCURRENTLY) for the whole import: the import skips its
    ANALYZE and commits (with a plain ``ANALYZE`` it would wait for that session)."""
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        with psycopg.connect(_admin(pg_url)) as holder:
            holder.execute(
                f'LOCK TABLE "{pg_schema(pg_url)}".records IN SHARE UPDATE EXCLUSIVE MODE'
            )
            done: list[object] = []
            worker = threading.Thread(
                target=lambda: done.append(mem.import_records(io.StringIO(export)))
            )
            worker.start()
            worker.join(120)
            imported = not worker.is_alive()
            holder.rollback()
            worker.join(120)
        assert imported, "the import waited for the lock"
    with _pg(pg_url) as conn:
        (n,) = conn.execute("SELECT count(*) FROM records").fetchone()
    assert n == TURNS


def _admin(url: str) -> str:
    import servers

    return servers.postgres().admin_url
