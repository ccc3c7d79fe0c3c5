"""Session-less turns among the user's other turns (``search/reply_terms.py``).

Without a session, a reply is indexed under the question of the turn listed just before it
among the user's turns, when that turn has no session either and came in the same
``add_messages`` call. Until session 29 the write took the call's previous turn by time
whatever was listed between them, and a later version (``set_access``) looked for a turn of
the call among the 20 turns of any session listed before it: with a session-less turn of
another call, or more than 20 turns of another session, dated between the question and its
reply, the reply was found by the question's words after its write and not after a
``set_access``; and a turn added between them later left the reply indexed under the
question, which its next version was not."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from memstrata import AsyncMemory, Memory, Scope

BOB = Scope("acme", "bob")
S2 = BOB.with_session("s2")
T0 = datetime(2026, 1, 1, 10, tzinfo=UTC)


def _at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def _found(mem: Memory, query: str) -> list[str]:
    return [h.id for h in mem.search(BOB, query, mode="lexical")]


def _terms(mem: Memory, rid: str) -> tuple[str, ...]:
    store: Any = mem.store
    return next(d.terms for batch in store.dump_records() for d in batch if d.record.id == rid)


NOTES = [{"role": "user", "content": f"note {i}", "observed_at": _at(1 + i)} for i in range(25)]
TURNS = [
    {"role": "user", "content": "what is the zanzibar code?", "observed_at": _at(0)},
    {"role": "assistant", "content": "It is 4512.", "observed_at": _at(60)},
]
NOTED = [{"role": "user", "content": "noted.", "observed_at": _at(30)}]


def _question_and_reply(mem: Memory) -> tuple[str, str]:
    q, r = mem.add_messages(BOB, TURNS)
    return q.id, r.id


def _same_after_a_version(mem: Memory, rid: str) -> None:
    """A new version of the reply keeping its text is indexed as the reply is now."""
    now = _terms(mem, rid)
    mem.set_access(BOB, rid, visibility="public")
    assert _terms(mem, rid) == now
    r = mem.get(BOB, rid)
    mem.update(BOB, rid, expected_version=r.version, content="It is 4512.")
    assert _terms(mem, rid) == now


def test_more_than_20_turns_of_another_session_between_index_it_alike(mem: Memory) -> None:
    mem.add_messages(S2, NOTES)
    qid, rid = _question_and_reply(mem)
    assert _found(mem, "zanzibar code") == [qid]  # the turn before the reply is note 24
    _same_after_a_version(mem, rid)
    assert _found(mem, "zanzibar code") == [qid]


def test_a_session_less_turn_of_another_call_between_unlinks_the_reply(mem: Memory) -> None:
    mem.add_messages(BOB, NOTED)
    qid, rid = _question_and_reply(mem)
    assert _found(mem, "zanzibar code") == [qid]
    _same_after_a_version(mem, rid)
    assert _found(mem, "zanzibar code") == [qid]


def test_a_turn_added_between_later_unlinks_it_as_a_version_would(mem: Memory) -> None:
    for between in (S2, BOB):  # another session's turn, a session-less one of another call
        qid, rid = _question_and_reply(mem)
        assert rid in _found(mem, "zanzibar code")
        (note,) = mem.add_messages(between, NOTED)  # re-terms the reply in its transaction
        assert rid not in _found(mem, "zanzibar code")
        _same_after_a_version(mem, rid)
        mem.purge(BOB, [qid, rid, note.id])


def test_the_async_memory_indexes_them_alike(url: str) -> None:
    async def run() -> None:
        async with AsyncMemory(url, embedder="hashing", background=False) as mem:
            q, r = await mem.add_messages(BOB, TURNS)
            await mem.add_messages(S2, NOTED)
            await mem.set_access(BOB, r.id, visibility="public")
            hits = await mem.search(BOB, "zanzibar code", mode="lexical")
            assert [h.id for h in hits] == [q.id]

    asyncio.run(run())
