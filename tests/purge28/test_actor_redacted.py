"""A whole-user purge also takes the user out of other users' audit events in which they
are the actor (``actor=<their id>``, free text a caller gave): the actor becomes the fixed
marker ``[purged]``, the event stays with everything else it says (its user, record ids,
reason, details). An actor that only contains the id (``system:maintenance`` when the user
is ``maintenance``) names someone else and is kept. Every store, sync and async."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memstrata import AsyncMemory, Memory, Scope
from memstrata.audit import PURGED

BOB = Scope("acme", "bob")
CAROL_ID = "carol.smith@example.com"
CAROL = Scope("acme", CAROL_ID)
OTHER = Scope("globex", "bob")  # another tenant: its log is not the purged user's tenant


def _fill(mem: Memory) -> dict[str, str]:
    mem.add(CAROL, "carol's own note")
    rec = mem.add(BOB, "bob's note")
    keep = mem.add(BOB, "bob's other note")
    mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["dave"], actor=CAROL_ID)
    mem.delete(BOB, keep.id, actor=CAROL_ID)
    mem.restore(BOB, keep.id, actor=f"{CAROL_ID}-assistant")  # another actor: kept
    mem.forget(BOB, [rec.id], reason="carol asked", actor="dave")
    far = mem.add(OTHER, "globex bob's note")
    mem.delete(OTHER, far.id, actor=CAROL_ID)  # another tenant: not this purge's
    return {"rec": rec.id, "keep": keep.id, "far": far.id}


def _check(events: list, far: list, ids: dict[str, str]) -> None:
    bobs = [e for e in events if e.user == "bob"]
    got = [(e.action, e.actor, e.record_ids) for e in bobs]
    assert got == [
        ("set_access", PURGED, (ids["rec"],)),
        ("delete", PURGED, (ids["keep"],)),
        ("restore", f"{CAROL_ID}-assistant", (ids["keep"],)),
        ("forget", "dave", (ids["rec"],)),
    ]
    assert bobs[0].details["allowed_users"] == ["dave"]  # the rest of the event is kept
    assert bobs[3].reason == "carol asked"
    assert [e.actor for e in far] == [CAROL_ID]


def test_the_purged_user_leaves_other_users_events_as_actor(mem: Memory) -> None:
    ids = _fill(mem)
    assert mem.purge(CAROL).remaining == 0
    _check(mem.audit.query("acme"), mem.audit.query("globex"), ids)
    assert not [e for e in mem.audit.query("acme") if e.actor == CAROL_ID]


def test_an_actor_containing_the_id_names_someone_else(mem: Memory) -> None:
    rec = mem.add(BOB, "bob's note")
    mem.add(Scope("acme", "maintenance"), "a user named maintenance")
    mem.delete(BOB, rec.id, actor="system:maintenance")
    mem.purge(Scope("acme", "maintenance"))
    assert [e.actor for e in mem.audit.query("acme", action="delete")] == ["system:maintenance"]


@pytest.mark.parametrize("store", ["sqlite", "memory", "postgresql"])
def test_async(store: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = {"sqlite": f"sqlite:///{tmp_path / 'a.db'}", "memory": "memory://"}.get(store)
    if url is None:
        url = request.getfixturevalue("pg_url")

    async def main() -> None:
        async with AsyncMemory(url, embedder="hashing", background=False) as mem:
            rec = await mem.add(BOB, "bob's note")
            await mem.delete(BOB, rec.id, actor=CAROL_ID)
            await mem.add(CAROL, "carol's note")
            await mem.purge(CAROL)
            events = await mem.audit.query("acme", action="delete")
            assert [(e.actor, e.user, e.record_ids) for e in events] == [(PURGED, "bob", (rec.id,))]

    asyncio.run(main())


def test_sqlite_keeps_its_trigger(tmp_path: Path) -> None:
    """The redaction drops the append-only trigger and creates it again in the purge's
    transaction: afterwards the log refuses updates as before."""
    import sqlite3

    db = tmp_path / "t.db"
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        rec = mem.add(BOB, "bob's note")
        mem.delete(BOB, rec.id, actor=CAROL_ID)
        mem.add(CAROL, "carol's note")
        mem.purge(CAROL)
    conn = sqlite3.connect(db)
    try:
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("UPDATE audit_log SET actor = 'x' WHERE action = 'delete'")
    finally:
        conn.close()
