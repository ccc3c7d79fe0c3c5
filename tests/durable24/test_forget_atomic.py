"""An explicit ``forget`` writes, per record, its note (a new version), its soft delete and
its audit event in one transaction (SQLite and PostgreSQL, where the audit log is a table
of the store's database; ``memory://`` appends the event just before). Before session 24
the event was written after the soft delete had committed: a process killed between them
(or an event that could not be written) left a record forgotten with no event naming it.

Killed anywhere (a real child process, ``kill -9`` at a gate: crash23's harness), every
forgotten record has its event, every live one has neither note nor event, and the forget
run again completes; a write of the event that fails leaves the record as it was."""

from __future__ import annotations

import asyncio
import signal

import pytest

from crash23.child import VICTIM
from crash23.kill import run
from memstrata import AsyncMemory, Memory
from memstrata.filters import Filters
from memstrata.records import MemoryRecord, RecordStatus

N = 40


def _fill(url: str) -> list[str]:
    with Memory(url, embedder="hashing", background=False) as mem:
        turns = [{"role": "user", "content": f"turn {i} about a heron{i:03d}q"} for i in range(N)]
        return [r.id for r in mem.add_messages(VICTIM, turns)]


def _all(mem: Memory) -> dict[str, MemoryRecord]:
    every = mem.list(VICTIM.user_scope, filters=Filters(include_deleted=True), limit=10_000)
    return {r.id: r for r in every}


def _audited(mem: Memory) -> list[str]:
    return [i for e in mem.audit.query("acme", action="forget") for i in e.record_ids]


GATES = [
    "update records set status@1",  # inside the first record's transaction
    "insert into audit_log@2",  # the second one's event: before, after its delete's commit
    "after:memstrata.maintenance._soft_delete@2",  # two forgotten, the third not begun
]


@pytest.mark.parametrize("gate", GATES)
def test_a_killed_forget_leaves_no_record_forgotten_without_its_event(url: str, gate: str) -> None:
    ids = _fill(url)
    chosen = ids[:5]
    assert run(url, gate, "forget", *chosen) == -signal.SIGKILL
    with Memory(url, embedder="hashing", background=False) as mem:
        held = _all(mem)
        assert set(held) == set(ids)
        forgotten = {i for i in chosen if held[i].status is RecordStatus.DELETED}
        assert forgotten == set(_audited(mem))  # each its event, and no event of a live one
        assert len(_audited(mem)) == len(forgotten)
        for i in chosen:
            noted = "forgotten" in held[i].metadata
            assert noted == (i in forgotten)  # the note and the delete went together
        if gate.startswith("after"):
            assert forgotten == set(chosen[:2])
        mem.forget(VICTIM, [i for i in chosen if i not in forgotten], reason="asked to")
        assert sorted(_audited(mem)) == sorted(chosen)
        assert mem.restore(VICTIM, chosen[0]).status is RecordStatus.ACTIVE


def refuse(url: str, statement: str, table: str, what: str) -> None:
    """A fault of the database itself: every ``statement`` (INSERT, DELETE) on ``table`` is
    refused ("<what> refused by d24"), by a trigger."""
    if url.startswith("sqlite"):
        import sqlite3

        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        conn.execute(
            f"CREATE TRIGGER d24_refuse BEFORE {statement} ON {table} "
            f"BEGIN SELECT RAISE(ABORT, '{what} refused by d24'); END"
        )
        conn.commit()
        conn.close()
        return
    import psycopg

    from memstrata.store.postgres.connection import parse_url

    opts = parse_url(url)
    with psycopg.connect(opts.conninfo, autocommit=True) as conn:
        schema = opts.schema
        conn.execute(
            f'CREATE FUNCTION "{schema}".d24_refuse() RETURNS trigger LANGUAGE plpgsql AS '
            f"$$ BEGIN RAISE EXCEPTION '{what} refused by d24'; END $$"
        )
        conn.execute(
            f'CREATE TRIGGER d24_refuse BEFORE {statement} ON "{schema}".{table} '
            f'FOR EACH ROW EXECUTE FUNCTION "{schema}".d24_refuse()'
        )


def _refuse_audit_inserts(url: str) -> None:
    """A fault of the database itself: every new audit row is refused."""
    refuse(url, "INSERT", "audit_log", "audit")


def test_a_forget_whose_event_cannot_be_written_forgets_nothing(url: str) -> None:
    """Async (natively async on PostgreSQL, through the thread adapter on SQLite)."""
    ids = _fill(url)
    _refuse_audit_inserts(url)

    async def forget() -> None:
        async with AsyncMemory(url, embedder="hashing", background=False) as amem:
            # (SQLite's error as the driver raised it, PostgreSQL's as a StoreError)
            with pytest.raises(Exception, match="audit refused by d24"):
                await amem.forget(VICTIM, ids[:3], reason="asked to")

    asyncio.run(forget())
    with Memory(url, embedder="hashing", background=False) as mem:
        held = _all(mem)
        assert all(held[i].status is RecordStatus.ACTIVE for i in ids[:3])
        assert all("forgotten" not in held[i].metadata for i in ids[:3])
        assert _audited(mem) == []
