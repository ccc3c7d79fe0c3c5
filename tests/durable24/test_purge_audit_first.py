"""``Memory.purge`` records its audit event before it purges (a whole user, or records by
id; SQLite and PostgreSQL, sync and async), as crash23 made the maintenance pass record its
retention purges: a purge cannot be undone, and before session 24 a process killed after
the store's purge and before the event (written after it) left the purge with no event. A
purge that fails is followed by a ``purge_failed`` event. The event holds no word of the
user: record ids for a purge by id; for a whole user no user, no id, and (once purged) no
actor naming them — a byte scan of the SQLite file after the purge finds none."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import pytest

from crash23.child import VICTIM
from crash23.kill import file_bytes, run
from memstrata import AsyncMemory, Memory, Scope
from memstrata.filters import Filters
from memstrata.store.sqlite.codec import scope_token

from .test_forget_atomic import refuse

OTHER = Scope("acme", "bystander-4242", session="so")
N = 60


def _fill(url: str) -> list[str]:
    with Memory(url, embedder="hashing", background=False) as mem:
        turns = [
            {"role": "user", "content": f"my zorblattquix code is {i} and flumble{i:04d}x"}
            for i in range(N)
        ]
        ids = [r.id for r in mem.add_messages(VICTIM, turns)]
        mem.add_messages(OTHER, [{"role": "user", "content": "the weather in Porto is mild"}])
        mem.delete(VICTIM, ids[-1], actor=f"user:{VICTIM.user}")  # an event naming them
    return ids


def _left(mem: Memory, scope: Scope = VICTIM) -> set[str]:
    every = mem.list(scope.user_scope, filters=Filters(include_deleted=True), limit=10_000)
    return {r.id for r in every}


def _purges(mem: Memory) -> list[Any]:
    return mem.audit.query("acme", action="purge")


# Killed after the store's purge committed, before base's event: SQLite at its VACUUM or WAL
# checkpoint (after the commit), PostgreSQL at the redaction Memory.purge makes after the
# store's (the third: the child's gate sees each statement twice, the connection's execute
# and its cursor's); and at the event's own INSERT.
WHOLE = {
    "sqlite": ["vacuum@1", "pragma wal_checkpoint@1", "insert into audit_log@1"],
    "postgresql": ["update audit_log@3", "insert into audit_log@1", "delete from records@1"],
}


@pytest.mark.parametrize(("backend", "gate"), [(b, g) for b, gates in WHOLE.items() for g in gates])
def test_a_killed_whole_user_purge_is_never_without_its_event(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str, gate: str
) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    if backend == "postgresql":
        url = request.getfixturevalue("pg_url")
    ids = _fill(url)
    assert run(url, gate, "purge-user") == -signal.SIGKILL
    with Memory(url, embedder="hashing", background=False) as mem:
        purged = not _left(mem)
        assert purged or _left(mem) == set(ids)  # all or nothing
        if not gate.startswith("insert"):
            assert purged or gate.startswith("delete")  # the kill came after the purge
        if purged:
            assert _purges(mem)  # its event was written before
        if gate.startswith("insert"):  # killed writing the event: nothing else was done
            assert not purged and not _purges(mem)
        report = mem.purge(VICTIM.user_scope)  # a purge again finishes it
        assert report.remaining == 0 and not _left(mem)
        assert _left(mem, OTHER)
        events = mem.audit.query("acme")
        assert [e.action for e in events if e.action != "purge"] == ["delete"]
        for e in events:  # what happened, not who nor which records
            assert e.user is None and e.record_ids == () and VICTIM.user not in e.actor
            assert e.details == {} and e.reason in ("[purged]", "a whole user")
    if backend == "sqlite":
        raw = file_bytes(Path(url.removeprefix("sqlite:///")))
        needles = [b"zorblattquix", b"flumble0001x", VICTIM.user.encode()]
        needles += [scope_token("acme", VICTIM.user).encode(), *(i.encode() for i in ids[:5])]
        assert [n for n in needles if n in raw] == []
        assert b"bystander-4242" in raw  # the scan sees what is there


IDS_GATES = [
    "call:memstrata.search.reply_terms.purge_records@1",  # recorded, nothing purged yet
    "after:memstrata.search.reply_terms.purge_records@1",  # purged; base had no event yet
]


@pytest.mark.parametrize("gate", IDS_GATES)
def test_a_killed_purge_of_records_is_never_without_its_event(url: str, gate: str) -> None:
    ids = _fill(url)
    chosen = ids[:10]
    assert run(url, gate, "purge-ids", *chosen) == -signal.SIGKILL
    with Memory(url, embedder="hashing", background=False) as mem:
        gone = set(ids) - _left(mem)
        assert gone in (set(), set(chosen))
        if gate.startswith("after"):
            assert gone == set(chosen)
        audited = {i for e in _purges(mem) for i in e.record_ids}
        assert audited == set(chosen)  # written before, whether or not the purge was made
        assert all(e.user == VICTIM.user and e.details == {} for e in _purges(mem))
        if not gone:
            mem.purge(VICTIM.user_scope, chosen)  # again: done, and recorded again
        assert set(ids) - _left(mem) == set(chosen)


def _refuse_record_deletes(url: str) -> None:
    """A fault of the database itself: deleting a record is refused."""
    refuse(url, "DELETE", "records", "delete")


def _allow_record_deletes(url: str) -> None:
    if url.startswith("sqlite"):
        import sqlite3

        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        conn.execute("DROP TRIGGER d24_refuse")
        conn.commit()
        conn.close()
        return
    import psycopg

    from memstrata.store.postgres.connection import parse_url

    opts = parse_url(url)
    with psycopg.connect(opts.conninfo, autocommit=True) as conn:
        conn.execute(f'DROP TRIGGER d24_refuse ON "{opts.schema}".records')


@pytest.mark.parametrize("whole", [True, False], ids=["whole-user", "by-id"])
def test_a_purge_that_fails_says_so_after_its_event_async(url: str, whole: bool) -> None:
    """Through ``AsyncMemory`` (natively async on PostgreSQL, the thread adapter on SQLite):
    the event, then the failed purge (nothing purged), then ``purge_failed`` naming the user
    and the same records — redacted, as their other events, by the purge that succeeds."""
    ids = _fill(url)
    chosen = None if whole else ids[:3]
    _refuse_record_deletes(url)

    async def purge() -> list[Any]:
        async with AsyncMemory(url, embedder="hashing", background=False) as amem:
            with pytest.raises(Exception, match="delete refused by d24"):
                await amem.purge(VICTIM.user_scope, chosen)
            return await amem.audit.query("acme")

    events = asyncio.run(purge())
    assert [e.action for e in events] == ["delete", "purge", "purge_failed"]
    _, purge_event, failed = events
    assert purge_event.record_ids == failed.record_ids == tuple(chosen or ())
    assert failed.user == VICTIM.user and "delete refused by d24" in (failed.reason or "")
    assert purge_event.user == (None if whole else VICTIM.user)
    _allow_record_deletes(url)
    with Memory(url, embedder="hashing", background=False) as mem:
        assert _left(mem) == set(ids)  # nothing purged
        mem.purge(VICTIM.user_scope)
        events = mem.audit.query("acme")
        assert [e.action for e in events] == ["delete", "purge", "purge_failed", "purge"]
        assert all(e.user is None and e.record_ids == () for e in events)


def test_the_event_is_in_the_log_when_the_store_purges_async(url: str) -> None:
    """What the store sees at the moment it purges: the event is already there."""
    _fill(url)
    seen: list[int] = []

    async def purge() -> None:
        async with AsyncMemory(url, embedder="hashing", background=False) as amem:
            store: Any = amem.store
            plain = store.purge_user

            async def purge_user(tenant: str, user: str) -> Any:
                seen.append(len(await amem.audit.query("acme", action="purge")))
                return await plain(tenant, user)

            store.purge_user = purge_user
            assert (await amem.purge(VICTIM.user_scope)).remaining == 0

    asyncio.run(purge())
    assert seen == [1]


def test_a_failure_that_cannot_be_recorded_is_logged_and_the_purges_error_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import sqlite3

    url = f"sqlite:///{tmp_path / 'm.db'}"
    ids = _fill(url)
    _refuse_record_deletes(url)
    conn = sqlite3.connect(tmp_path / "m.db")
    conn.execute(
        "CREATE TRIGGER d24_unrecorded BEFORE INSERT ON audit_log WHEN NEW.action = "
        "'purge_failed' BEGIN SELECT RAISE(ABORT, 'audit refused by d24'); END"
    )
    conn.commit()
    conn.close()
    with Memory(url, embedder="hashing", background=False) as mem:
        with pytest.raises(Exception, match="delete refused by d24"):  # the purge's, not ours
            mem.purge(VICTIM.user_scope, ids[:2])
        assert [e.action for e in mem.audit.query("acme")] == ["delete", "purge"]
    assert "purge_failed event not recorded" in caplog.text and "audit refused" in caplog.text
