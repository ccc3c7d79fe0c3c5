"""kill -9 in the middle of a purge on PostgreSQL. A purge is one transaction: killed
inside it, nothing is purged and nothing half (the caller had no report; purging again
works). ``purge(compact=True)`` killed inside its compaction (one ``VACUUM FULL`` per
table, after the purge committed): no row of the user is left, and the raw bytes go with
the next ``compact`` (``memstrata compact``), which rewrites every table — the
compaction is explicit on PostgreSQL, so nothing runs it on its own at the next open."""

from __future__ import annotations

import signal
from typing import Any

import pytest

from memstrata import Memory, Scope
from memstrata.filters import Filters

from .child import VICTIM
from .kill import run

OTHER = Scope("acme", "bystander-4242", session="so")
N = 200


def _fill(url: str) -> list[str]:
    with Memory(url, embedder="hashing", background=False) as mem:
        turns = [
            {"role": "user", "content": f"my zorblattquix code {i} flumble{i:04d}x"}
            for i in range(N)
        ]
        ids = [r.id for r in mem.add_messages(VICTIM, turns)]
        mem.add_messages(
            OTHER, [{"role": "user", "content": f"Porto is mild {i}"} for i in range(N)]
        )
        mem.flush()
    return ids


def _count(mem: Memory, scope: Scope) -> int:
    flt = Filters(include_deleted=True)
    return len(mem.list(scope.user_scope, filters=flt, limit=100_000))


def _rows_naming(mem: Memory, needle: str) -> int:
    """Rows of any table of the store's schema whose text holds ``needle``."""
    store: Any = mem.store
    n = 0
    with store._pool.connection() as conn:
        tables = [
            r["table_name"]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = "
                "current_schema() AND table_type = 'BASE TABLE'"
            ).fetchall()
        ]
        for table in tables:
            n += conn.execute(
                f'SELECT count(*) AS n FROM "{table}" t WHERE lower(t::text) LIKE %s',
                (f"%{needle.lower()}%",),
            ).fetchone()["n"]
    return n


@pytest.mark.parametrize("gate", ["delete from records@1", "delete from vectors@1"])
def test_a_whole_user_purge_killed_inside_its_transaction_purges_nothing(
    pg_url: str, gate: str
) -> None:
    _fill(pg_url)
    assert run(pg_url, gate, "purge-user") == -signal.SIGKILL
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        assert _count(mem, VICTIM) >= N and _count(mem, OTHER) >= N  # nothing half done
        assert mem.purge(VICTIM.user_scope).remaining == 0
        assert _count(mem, VICTIM) == 0 and _rows_naming(mem, "zorblattquix") == 0


def test_a_purge_of_records_killed_inside_its_transaction_purges_nothing(pg_url: str) -> None:
    ids = _fill(pg_url)
    assert run(pg_url, "delete from records@1", "purge-ids", *ids[:20]) == -signal.SIGKILL
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        assert len(mem.store.get_many(VICTIM.user_scope, ids)) == N
        mem.purge(VICTIM.user_scope, ids[:20])
        assert len(mem.store.get_many(VICTIM.user_scope, ids)) == N - 20
        assert _rows_naming(mem, "flumble0005x") == 0


@pytest.mark.parametrize("gate", ["vacuum (full@1", "vacuum (full@5"])
def test_a_purge_killed_inside_its_compaction(pg_url: str, gate: str) -> None:
    _fill(pg_url)
    assert run(pg_url, gate, "purge-user-compact") == -signal.SIGKILL
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        assert _count(mem, VICTIM) == 0 and _count(mem, OTHER) >= N
        assert _rows_naming(mem, "zorblattquix") == 0
        assert _rows_naming(mem, VICTIM.user) == 0
        assert mem.audit.query("acme", action="purge")  # its event was written before
        report = mem.compact()
        assert not report.skipped and len(report.rewritten) >= 10
