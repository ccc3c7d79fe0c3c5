"""What a purge re-indexes (``reply_terms.terms_after_purge``).

Since session 28 a turn added among a session's stored turns (a backfill) re-indexes the
stored turn now listed after it under its question: that turn was written *before* the
question. A purge of the question re-indexed only the turns written at or after it, so the
older turn kept the purged question's words (a privacy leak; the hypothesis test in
``tests/privacy/test_purge_reply_terms.py`` found it on the merged tree too). And a purge of
a turn that asks nothing left the turn after it indexed under its own words, though the
turn now before it asks something: a later version of it (``set_access``) was indexed under
that question, the purge's re-indexing was not."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from memstrata import AsyncMemory, Memory, Scope

BOB = Scope("acme", "bob")
S1 = BOB.with_session("s1")
T0 = datetime(2026, 1, 1, 10, tzinfo=UTC)


def _at(hours: int) -> datetime:
    return T0 + timedelta(hours=hours)


def _terms(mem: Memory, rid: str) -> tuple[str, ...]:
    store: Any = mem.store
    return next(d.terms for batch in store.dump_records() for d in batch if d.record.id == rid)


def _found(mem: Memory, query: str) -> list[str]:
    return [h.id for h in mem.search(BOB, query, mode="lexical")]


BACKFILL = [
    {"role": "user", "content": "Morning.", "observed_at": _at(1)},
    {"role": "assistant", "content": "It is 4512.", "observed_at": _at(5)},
]
QUESTION = {"role": "user", "content": "what is the zanzibar code?", "observed_at": _at(2)}


def test_a_purged_backfilled_question_leaves_no_word_in_an_older_turn(mem: Memory) -> None:
    _, r = mem.add_messages(S1, BACKFILL)
    (q,) = mem.add_messages(S1, [QUESTION])  # listed between them: r is indexed under it
    assert set(_found(mem, "zanzibar code")) == {q.id, r.id}
    mem.purge(BOB, [q.id])
    assert "zanzibar" not in _terms(mem, r.id)
    assert _found(mem, "zanzibar code") == []


def test_a_purged_turn_between_links_the_next_one_as_a_version_would(mem: Memory) -> None:
    q, b, r = mem.add_messages(
        S1,
        [
            {"role": "user", "content": "what is the zanzibar code?"},
            {"role": "user", "content": "Hold on."},
            {"role": "assistant", "content": "It is 4512."},
        ],
    )
    assert set(_found(mem, "zanzibar code")) == {q.id, b.id}  # b answers q, r answers b
    mem.purge(BOB, [b.id])
    purged = _terms(mem, r.id)
    assert set(_found(mem, "zanzibar code")) == {q.id, r.id}
    mem.set_access(BOB, r.id, visibility="public")
    assert _terms(mem, r.id) == purged


def test_the_async_memory_purges_alike(url: str) -> None:
    async def run() -> None:
        async with AsyncMemory(url, embedder="hashing", background=False) as mem:
            _, r = await mem.add_messages(S1, BACKFILL)
            (q,) = await mem.add_messages(S1, [QUESTION])
            await mem.purge(BOB, [q.id])
            hits = await mem.search(BOB, "zanzibar code", mode="lexical")
            assert [h.id for h in hits] == []
            assert r.id in [h.id for h in await mem.search(BOB, "4512", mode="lexical")]

    asyncio.run(run())
