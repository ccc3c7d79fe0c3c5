"""The in-process embedding cache was keyed by model and text only, shared by every user of a
process: a question embedded once was found by anyone asking it again, ~10 ms of the default
embedder against ~0.1 ms, so a user timing a search (their own, or through a key bound to
another user as a caller) learnt whether someone had asked the same question; and a caller's
MMR search read (and filled) the owner's durable passage cache. Each user's entries are now
their own (``embedder/cache.py``): a scoped call reads and fills those of the one who asks,
and a caller never touches the owner's durable cache. Counted with the model's calls (the
recording embedder), not timed. Fail before the fix."""

from __future__ import annotations

import asyncio

import pytest

from memstrata import AsyncMemory, Memory, Scope, SearchConfig
from recording_embedder import RecordingEmbedder

BOB = Scope("acme", "bob")
CAROL = BOB.as_caller("carol")
DAVE = Scope("acme", "dave")
Q = "what did the clinic say about my results?"


@pytest.fixture
def emb() -> RecordingEmbedder:
    return RecordingEmbedder()


@pytest.fixture
def mem(emb: RecordingEmbedder, url: str) -> Memory:
    m = Memory(url, embedder=emb, background=False)
    rec = m.add(BOB, "the clinic called about the results")
    m.set_access(BOB, rec.id, visibility="shared", allowed_users=["carol"])
    yield m
    m.close()


def test_a_caller_does_not_find_the_owners_question_cached(
    mem: Memory, emb: RecordingEmbedder
) -> None:
    mem.search(BOB, Q)
    n = len(emb.queries)
    mem.search(CAROL, Q)
    assert emb.queries[n:] == [Q]  # embedded again: bob's entry is not carol's
    mem.search(CAROL, Q)
    mem.search(BOB, Q)
    assert emb.queries[n:] == [Q]  # each one's repeat is still found


def test_another_user_does_not_find_a_question_cached(mem: Memory, emb: RecordingEmbedder) -> None:
    """carol searching her own memory timed bob's questions just as well."""
    mem.search(BOB, Q)
    n = len(emb.queries)
    mem.search(DAVE, Q)
    mem.search(Scope("other-tenant", "bob"), Q)
    assert emb.queries[n:] == [Q, Q]


def test_build_context_keeps_each_users_questions_apart(
    mem: Memory, emb: RecordingEmbedder
) -> None:
    mem.build_context(BOB, Q)
    n = len(emb.queries)
    mem.build_context(BOB, Q)
    assert emb.queries[n:] == []  # the owner's repeated question: cached (the hot path)
    mem.build_context(DAVE, Q)
    mem.build_context(CAROL, Q)
    assert emb.queries[n:] == [Q, Q]


def test_a_callers_mmr_search_reads_no_cache_of_the_owner(
    mem: Memory, emb: RecordingEmbedder
) -> None:
    for text in ("the ferry leaves at nine", "the ferry office opens at eight"):
        rec = mem.add(BOB, text)
        mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["carol"])
    mmr = SearchConfig(mmr_lambda=0.5)
    mem.search(BOB, "ferry", config=mmr)
    n = len(emb.calls)
    mem.search(BOB, "ferry", config=mmr)
    assert emb.calls[n:] == []  # the owner's own: cached
    hits = mem.search(CAROL, "ferry", config=mmr)
    passages = {t for texts, query in emb.calls[n:] if not query for t in texts}
    assert passages == {h.record.text for h in hits} and len(hits) >= 2
    n = len(emb.calls)
    mem.search(CAROL, "ferry", config=mmr)
    assert emb.calls[n:] == []  # the caller's repeat: in the caller's own entries


def test_async_callers_and_users_keep_their_questions_apart(url: str) -> None:
    emb = RecordingEmbedder()

    async def run() -> None:
        async with AsyncMemory(url, embedder=emb, background=False) as mem:
            await mem.search(BOB, Q)
            await mem.search(BOB, Q)
            await mem.search(CAROL, Q)
            await mem.search(DAVE, Q)
            await mem.search(CAROL, Q)

    asyncio.run(run())
    assert emb.queries == [Q, Q, Q]
