"""Session-less turns among the user's other sessions' turns (``search/reply_terms.py``).

Without a session, a reply is indexed under the question of the session-less turn listed
just before it among the user's turns, when that turn came in the same ``add_messages``
call. Until session 29 the write took the call's previous turn by time whatever was listed
between them, and a later version (``set_access``, an edit keeping the reply's question)
looked among the 20 turns of any session listed before it: with more than 20 turns of
another session dated between the question and its reply, or a session-less turn of
another call, the reply was found by the question's words after its write and not after a
``set_access`` (or the other way round), and an edit of the question did not reach it."""

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


def _other_session(mem: Memory, n: int = 25) -> None:
    """``n`` turns of session s2 dated between 10:00 and 10:30 (none asks anything)."""
    mem.add_messages(
        S2, [{"role": "user", "content": f"note {i}", "observed_at": _at(1 + i)} for i in range(n)]
    )


TURNS = [
    {"role": "user", "content": "what is the zanzibar code?", "observed_at": _at(0)},
    {"role": "assistant", "content": "It is 4512.", "observed_at": _at(60)},
]


def _question_and_reply(mem: Memory) -> tuple[str, str]:
    q, r = mem.add_messages(BOB, TURNS)
    return q.id, r.id


def test_more_than_20_turns_of_another_session_between_keep_the_reply_linked(
    mem: Memory,
) -> None:
    _other_session(mem)
    qid, rid = _question_and_reply(mem)
    written = _terms(mem, rid)
    assert rid in _found(mem, "zanzibar code")
    mem.set_access(BOB, rid, visibility="public")  # a new version keeping the text
    assert _terms(mem, rid) == written
    assert rid in _found(mem, "zanzibar code")
    # an edit of the question reaches its reply across the other session's turns
    q = mem.get(BOB, qid)
    mem.update(BOB, qid, expected_version=q.version, content="what is the quokka pin?")
    assert rid in _found(mem, "quokka pin") and _found(mem, "zanzibar") == []


def test_a_session_less_turn_of_another_call_between_unlinks_the_reply(mem: Memory) -> None:
    (x,) = mem.add_messages(BOB, [{"role": "user", "content": "noted.", "observed_at": _at(30)}])
    qid, rid = _question_and_reply(mem)
    written = _terms(mem, rid)
    assert _found(mem, "zanzibar code") == [qid]  # the turn before the reply is x
    mem.set_access(BOB, rid, visibility="public")
    assert _terms(mem, rid) == written
    assert _found(mem, "zanzibar code") == [qid]


def test_a_later_session_less_call_between_unlinks_it_as_a_version_would(mem: Memory) -> None:
    qid, rid = _question_and_reply(mem)
    assert rid in _found(mem, "zanzibar code")
    _other_session(mem)  # another session between: the link stays
    assert rid in _found(mem, "zanzibar code")
    mem.add_messages(BOB, [{"role": "user", "content": "noted.", "observed_at": _at(30)}])
    assert _found(mem, "zanzibar code") == [qid]  # in the call's transaction
    now = _terms(mem, rid)
    mem.set_access(BOB, rid, visibility="public")
    assert _terms(mem, rid) == now


def test_the_async_memory_indexes_them_alike(url: str) -> None:
    async def run() -> None:
        async with AsyncMemory(url, embedder="hashing", background=False) as mem:
            await mem.add_messages(
                S2,
                [
                    {"role": "user", "content": f"note {i}", "observed_at": _at(1 + i)}
                    for i in range(25)
                ],
            )
            q, r = await mem.add_messages(BOB, TURNS)
            await mem.set_access(BOB, r.id, visibility="public")
            hits = await mem.search(BOB, "zanzibar code", mode="lexical")
            assert r.id in [h.id for h in hits]

    asyncio.run(run())
