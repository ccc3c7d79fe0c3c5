"""PostgreSQL writes whose terms make 1,000 postings or more.

``lexical.index`` writes a transaction's postings with ``COPY`` from 1,000 of them, and an
add, a batch of turns or a document under 64 records is written in psycopg's pipeline
mode, which cannot send a ``COPY``: every such write was refused with "PostgreSQL ...
failed: COPY cannot be used in pipeline mode; nothing of this call was written" — one
note of ~1,100 different words, twenty turns of sixty, a document of that length, sync
and async alike — while SQLite and ``memory://`` stored them. Session 31's audit: inside
a pipeline the postings are one ``INSERT`` (as under 1,000)."""

from __future__ import annotations

import asyncio
import random
import string

from memstrata import AsyncMemory, Memory, Message, Role, Scope

ALICE = Scope("acme", "alice", session="s1")


def _words(n: int, seed: int) -> str:
    """``n`` made-up words, nearly all different (each its own term)."""
    r = random.Random(seed)
    return " ".join(
        "".join(r.choice(string.ascii_lowercase) for _ in range(r.randrange(5, 9)))
        for _ in range(n)
    )


def test_a_long_note_turns_and_a_document_are_stored(pg_url: str) -> None:
    mem = Memory(pg_url, embedder="hashing", background=False)
    try:
        note = mem.add(ALICE, "zephyrine " + _words(1_100, 1))
        turns = mem.add_messages(ALICE, [Message(Role.USER, _words(60, 10 + i)) for i in range(20)])
        doc = mem.knowledge.ingest(ALICE, "quillbrook " + _words(1_500, 2))
        edited = mem.update(
            ALICE, note.id, content="zephyrine " + _words(1_200, 3), expected_version=1
        )
        assert edited.version == 2 and len(turns) == 20 and doc
        hits = mem.search(ALICE.user_scope, "zephyrine", top_k=3)
        assert hits and hits[0].record.id == note.id
        assert mem.search(ALICE.user_scope, "quillbrook", top_k=3)
    finally:
        mem.close()


def test_async_the_same(pg_url: str) -> None:
    async def run() -> None:
        async with AsyncMemory(pg_url, embedder="hashing", background=False) as mem:
            note = await mem.add(ALICE, "zephyrine " + _words(1_100, 4))
            await mem.add_messages(
                ALICE, [Message(Role.USER, _words(60, 30 + i)) for i in range(20)]
            )
            hits = await mem.search(ALICE.user_scope, "zephyrine", top_k=3)
            assert hits and hits[0].record.id == note.id

    asyncio.run(run())
