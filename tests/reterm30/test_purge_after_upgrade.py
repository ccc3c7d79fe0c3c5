"""A store written before session 29 may hold a reply indexed under a question of its
``add_messages`` call that is not listed right before it: a session-less turn under its
call's previous turn by time whatever was listed between them (until session 29), a
session's turn under its call's previous turn when a turn of another call is dated between
them (until session 28). Since session 30 a purge of that question reads only its
neighbours (``reply_terms.terms_after_purge``), so the reply kept the purged question's
words: a search for them still found it. Opening such a store now re-indexes every turn
by today's rule (SQLite schema 20, PostgreSQL step 27), once.

Fails before the migration: the purged question's words find the reply."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memstrata import FixedClock, Memory, Message, Role, Scope
from reterm30.old_stores import VICTIM, differing, index_under, mark_old, stored

T0 = datetime(2026, 1, 1, 10, tzinfo=UTC)


def _at(hours: int) -> datetime:
    return T0 + timedelta(hours=hours)


def _open(url: str, clock: FixedClock) -> Memory:
    return Memory(url, embedder="hashing", clock=clock, background=False)


@pytest.mark.parametrize("session", [None, "s1"], ids=["session-less", "session"])
def test_a_purged_question_of_an_old_store_leaves_no_word_in_its_reply(
    url: str, session: str | None
) -> None:
    scope = Scope(VICTIM.tenant, VICTIM.user, session=session)
    clock = FixedClock(datetime(2026, 2, 1, tzinfo=UTC))
    mem = _open(url, clock)
    try:
        q, r = mem.add_messages(
            scope,
            [
                Message(role=Role.USER, content="what is the zanzibar code?", observed_at=_at(1)),
                Message(role=Role.ASSISTANT, content="It is 4512.", observed_at=_at(3)),
            ],
        )
        clock.advance(seconds=1)
        (x,) = mem.add_messages(  # another call's turn, listed between them
            scope, [Message(role=Role.USER, content="Morning.", observed_at=_at(2))]
        )
        assert "zanzibar" not in stored(mem)[r.id]  # today's rule: r answers x
        index_under(mem, {r.id: q.text})  # as memstrata indexed r before session 29
    finally:
        mem.close()
    mark_old(url)
    mem = _open(url, clock)
    try:
        mem.purge(VICTIM, [q.id])
        assert [h.id for h in mem.search(VICTIM, "zanzibar code", mode="lexical")] == []
        assert [h.id for h in mem.search(VICTIM, "4512", mode="lexical")] == [r.id]
        assert differing(mem, [r.id, x.id]) == {}
    finally:
        mem.close()
