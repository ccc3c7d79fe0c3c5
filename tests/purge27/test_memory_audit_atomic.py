"""memory://: a change and its audit event are one step, as on SQLite and PostgreSQL.
Before, the event was appended before the change (``AuditLog.ahead``), and a change that
lost a race (a version conflict, a concurrent delete) left an event of a change never
made. The race is real: another writer changes the record between the call's read and
its write (sync and async)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from memstrata import AsyncMemory, Memory, Scope
from memstrata.errors import ConflictError
from memstrata.records import RecordStatus

BOB = Scope("acme", "bob")


def _race_after_read(store: Any, meanwhile: Any) -> None:
    """The store's next ``get`` returns, then ``meanwhile`` runs (another writer) before
    the caller goes on to write: the interleaving a race would give."""
    plain = store.get
    fired = [False]

    def get(*args: Any, **kw: Any) -> Any:
        out = plain(*args, **kw)
        if not fired[0]:
            fired[0] = True
            meanwhile()
        return out

    store.get = get


def _delete(store: Any, rid: str, at: Any) -> Any:
    return lambda: store.set_status(BOB, [rid], RecordStatus.DELETED, at)


def test_a_set_access_that_loses_a_race_leaves_no_event() -> None:
    mem = Memory("memory://", embedder="hashing", background=False)
    try:
        rec = mem.add(BOB, "bob's note")
        _race_after_read(mem.store, _delete(mem.store, rec.id, rec.updated_at))
        with pytest.raises(ConflictError):
            mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["dave"])
        assert mem.audit.query("acme", action="set_access") == []
        # one that wins has its event
        mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["dave"])
        assert len(mem.audit.query("acme", action="set_access")) == 1
    finally:
        mem.close()


def test_a_set_access_that_loses_a_race_leaves_no_event_async() -> None:
    async def main() -> None:
        mem = AsyncMemory("memory://", embedder="hashing", background=False)
        try:
            rec = await mem.add(BOB, "bob's note")
            sync: Any = mem.store.sync  # type: ignore[attr-defined]
            _race_after_read(sync, _delete(sync, rec.id, rec.updated_at))
            with pytest.raises(ConflictError):
                await mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["d"])
            assert await mem.audit.query("acme", action="set_access") == []
        finally:
            await mem.close()

    asyncio.run(main())


def test_an_event_of_a_block_that_fails_is_not_kept() -> None:
    mem = Memory("memory://", embedder="hashing", background=False)
    try:
        rec = mem.add(BOB, "bob's note")
        event = mem.audit.event("acme", "library", "delete", user="bob", record_ids=[rec.id])
        with pytest.raises(RuntimeError), mem.store.transaction() as tx:
            tx.set_status(BOB, [rec.id], RecordStatus.DELETED, rec.updated_at)
            mem.audit.append_in(tx, [event])
            raise RuntimeError("the block fails after both")
        assert mem.audit.query("acme", action="delete") == []
        assert mem.get(BOB, rec.id).is_active
    finally:
        mem.close()
