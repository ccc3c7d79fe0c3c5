"""An actor as long as a note.

``actor`` (who a delete, a restore, a purge, a ``set_access`` ... was done by, in the audit
log) took any text up to a record's length; PostgreSQL keeps it in the log's
``(tenant, actor)`` index, whose rows hold at most 2,704 bytes, so a call with an actor
of 9,000 characters was refused there ("PostgreSQL ... failed: index row requires 9024
bytes") and written on SQLite and ``memory://``; ``audit.record`` took a user as long.
Session 31's audit: an actor, and an event's tenant, user and record ids, are ids
(``validation.check_id``: at most 256 characters, 640 bytes), refused before anything is
written on every store."""

from __future__ import annotations

import pytest

from memstrata import Memory, Scope, ValidationError

ALICE = Scope("acme", "alice")


@pytest.mark.parametrize("mem", ["memory", "sqlite", "postgresql"], indirect=True)
def test_a_long_actor_is_refused_before_anything_is_written(mem: Memory) -> None:
    note = mem.add(ALICE, "a note")
    long_actor = "ops-bot " * 1_200  # 9,600 characters
    for call in (
        lambda: mem.delete(ALICE, note.id, actor=long_actor),
        lambda: mem.set_access(ALICE, note.id, visibility="public", actor=long_actor),
        lambda: mem.purge(ALICE, actor=long_actor),
        lambda: mem.audit.record("acme", long_actor, "custom"),
        lambda: mem.audit.record("acme", "ops", "custom", user="u" * 5_000),
    ):
        with pytest.raises(ValidationError, match="at most 256 characters"):
            call()
    assert mem.get(ALICE, note.id).version == 1 and mem.list(ALICE)
    assert [e.action for e in mem.audit.query("acme", action="custom")] == []
    actor = "運" * 213  # 639 bytes: the widest actor written everywhere
    mem.set_access(ALICE, note.id, visibility="public", actor=actor)
    mem.delete(ALICE, note.id, actor=actor)
    assert [e.actor for e in mem.audit.query("acme", actor=actor)] == [actor, actor]
