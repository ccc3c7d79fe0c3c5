"""A short reply is indexed under the words of the question before it
(``search/reply_terms.py``). A new version that keeps the text (``set_access``, a tag, an
importance) was indexed under the reply's own words only, so the owner's search lost the
reply by the question's words (caller27's strict xfail, ``tests/caller27/
test_left_for_others.py``). Kept now (``reply_terms.kept_terms``); and a caller, who may be
shown the reply but not the question, matches it on the reply's own words only: matching on
the question's would tell what the owner asked (``search/lexical.py``)."""

from __future__ import annotations

import asyncio

from memstrata import AsyncMemory, Memory, Scope

from .conftest import live_server, served  # noqa: F401

BOB = Scope("acme", "bob")
S1 = BOB.with_session("s1")
CAROL = BOB.as_caller("carol")
TURNS = [
    {"role": "user", "content": "what is the zanzibar code?"},
    {"role": "assistant", "content": "It is 4512."},
]


def _reply(mem: Memory, scope: Scope = S1) -> str:
    mem.add_messages(scope, TURNS)
    (reply,) = [r for r in mem.list(BOB) if r.role == "assistant"]
    return reply.id


def _found(mem: Memory, scope: Scope, query: str) -> list[str]:
    return [h.id for h in mem.search(scope, query, mode="lexical")]


def test_the_owner_finds_a_reply_by_its_question_after_a_change(mem: Memory) -> None:
    rid = _reply(mem)
    assert rid in _found(mem, BOB, "zanzibar code")
    mem.set_access(BOB, rid, visibility="shared", allowed_users=["carol"])
    assert rid in _found(mem, BOB, "zanzibar code")
    rec = mem.get(BOB, rid)
    mem.update(BOB, rid, expected_version=rec.version, tags=["codes"], importance=0.9)
    assert rid in _found(mem, BOB, "zanzibar code")
    mem.set_access(BOB, rid, visibility="private", allowed_users=[])
    assert rid in _found(mem, BOB, "zanzibar code")


def test_a_reply_without_a_session_keeps_its_question_too(mem: Memory) -> None:
    rid = _reply(mem, BOB)
    assert rid in _found(mem, BOB, "zanzibar code")
    mem.set_access(BOB, rid, visibility="shared", allowed_users=["carol"])
    assert rid in _found(mem, BOB, "zanzibar code")


def test_a_caller_matches_a_shared_reply_on_its_own_words_only(mem: Memory) -> None:
    rid = _reply(mem)
    mem.set_access(BOB, rid, visibility="shared", allowed_users=["carol"])
    assert rid not in _found(mem, CAROL, "zanzibar code")  # the unshared question's words
    assert _found(mem, CAROL, "4512") == [rid]  # its own
    assert rid in _found(mem, BOB, "zanzibar code")


def test_the_async_memory_keeps_the_terms_and_hides_them_from_a_caller(url: str) -> None:
    async def main() -> None:
        async with AsyncMemory(url, embedder="hashing", background=False) as amem:
            await amem.add_messages(BOB.with_session("s1"), TURNS)
            (reply,) = [r for r in await amem.list(BOB) if r.role == "assistant"]
            await amem.set_access(BOB, reply.id, visibility="shared", allowed_users=["carol"])
            mine = await amem.search(BOB, "zanzibar code", mode="lexical")
            assert reply.id in [h.id for h in mine]
            theirs = await amem.search(CAROL, "zanzibar code", mode="lexical")
            assert reply.id not in [h.id for h in theirs]

    asyncio.run(main())


def test_over_http_a_caller_does_not_match_the_question(served) -> None:  # noqa: F811
    rid = _reply(served.memory)
    served.memory.set_access(BOB, rid, visibility="shared", allowed_users=["carol"])
    c = served.client
    carol = served.h(served.keys.create("acme", user="carol").secret)
    body = {"query": "zanzibar code", "mode": "lexical"}
    got = c.post("/v1/users/bob/search", json=body, headers=carol)
    assert got.status_code == 200 and rid not in got.text, got.text
    bob = served.h(served.keys.create("acme", user="bob").secret)
    got = c.post("/v1/users/bob/search", json=body, headers=bob)
    assert got.status_code == 200 and rid in got.text, got.text


def test_a_word_of_the_question_does_not_move_a_callers_hits(mem: Memory) -> None:
    """Matching on its own words only is not enough: scored by the store's BM25, a shared
    reply rose above another shared hit when a word of the unshared question joined the
    query. A caller's lexical scores now sum its own terms only."""
    mem.add_messages(
        S1,
        [
            {"role": "user", "content": "what is the zanzibar code?"},
            {"role": "assistant", "content": "It is 4512, I wrote it on the back of the ledger."},
        ],
    )
    (reply,) = [r for r in mem.list(BOB) if r.role == "assistant"]
    note = mem.add(BOB, "4512 noted")
    for rid in (reply.id, note.id):
        mem.set_access(BOB, rid, visibility="shared", allowed_users=["carol"])

    def seen(query: str) -> list[tuple[str, float]]:
        return [(h.id, h.score) for h in mem.search(CAROL, query, mode="lexical")]

    assert [i for i, _ in seen("4512")] == [note.id, reply.id]
    assert seen("4512 zanzibar") == seen("4512")
    mine = [h.id for h in mem.search(BOB, "4512 zanzibar", mode="lexical")]
    assert mine.index(reply.id) < mine.index(note.id)  # the owner's index is whole


def test_a_corrected_reply_still_answers_its_question(mem: Memory) -> None:
    """``update(content=...)`` of a reply re-indexed it under its new words only: the
    owner's search by the question lost it."""
    rid = _reply(mem)
    rec = mem.get(BOB, rid)
    mem.update(BOB, rid, expected_version=rec.version, content="It is 4513, sorry.")
    assert rid in _found(mem, BOB, "zanzibar code")
    assert rid in _found(mem, BOB, "4513") and rid not in _found(mem, BOB, "4512")
