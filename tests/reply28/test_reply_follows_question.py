"""A short reply is indexed under the questions of the turn before it
(``search/reply_terms.py``). Until session 28 it kept the words that turn had when the reply
was written: an edit of the question (``update(content=...)``) left the reply found by the
old words and not by the new ones, and a deleted or forgotten question's words still found
the reply (a search is never shown a deleted record, but it was shown the reply the deleted
words were asked for). The reply now follows the turn before it, in the same transaction:
its current questions while it is live, none once deleted, back with a restore."""

from __future__ import annotations

import asyncio
from typing import Any

from memstrata import AsyncMemory, Memory, Scope
from memstrata.search.tokenize import tokenize

from .conftest import live_server, served  # noqa: F401

BOB = Scope("acme", "bob")
S1 = BOB.with_session("s1")
TURNS = [
    {"role": "user", "content": "what is the zanzibar code?"},
    {"role": "assistant", "content": "It is 4512."},
]


def _turns(mem: Memory, scope: Scope = S1) -> tuple[str, str]:
    q, r = mem.add_messages(scope, TURNS)
    return q.id, r.id


def _found(mem: Memory, query: str, scope: Scope = BOB) -> list[str]:
    return [h.id for h in mem.search(scope, query, mode="lexical")]


def _terms(mem: Memory, rid: str) -> tuple[str, ...]:
    store: Any = mem.store
    durable = getattr(store, "durable", store)
    return next(d.terms for batch in durable.dump_records() for d in batch if d.record.id == rid)


def test_an_edited_question_moves_its_reply_to_the_new_words(mem: Memory) -> None:
    qid, rid = _turns(mem)
    assert rid in _found(mem, "zanzibar code")
    q = mem.get(BOB, qid)
    mem.update(BOB, qid, expected_version=q.version, content="what is the quokka pin?")
    assert _found(mem, "zanzibar") == []  # neither the question nor its reply
    assert set(_found(mem, "quokka pin")) == {qid, rid}
    assert "zanzibar" not in _terms(mem, rid) and "quokka" in _terms(mem, rid)
    assert rid in _found(mem, "4512")
    # an edit that asks nothing any more leaves the reply its own words
    q = mem.get(BOB, qid)
    mem.update(BOB, qid, expected_version=q.version, content="Tell me the quokka pin.")
    assert _found(mem, "quokka pin") == [qid]
    assert _terms(mem, rid) == tuple(tokenize(TURNS[1]["content"]))


def test_an_edit_that_keeps_the_question_touches_no_reply(mem: Memory) -> None:
    qid, rid = _turns(mem)
    before = _terms(mem, rid)
    q = mem.get(BOB, qid)
    mem.update(BOB, qid, expected_version=q.version, content="Hm. what is the zanzibar code?")
    assert _terms(mem, rid) == before


def test_a_session_less_question_edit_moves_its_reply_too(mem: Memory) -> None:
    qid, rid = _turns(mem, BOB)
    q = mem.get(BOB, qid)
    mem.update(BOB, qid, expected_version=q.version, content="what is the quokka pin?")
    assert rid in _found(mem, "quokka pin") and rid not in _found(mem, "zanzibar")


def test_a_deleted_question_leaves_no_word_in_its_reply(mem: Memory) -> None:
    qid, rid = _turns(mem)
    mem.delete(BOB, qid)
    assert _found(mem, "zanzibar code") == []
    assert "zanzibar" not in _terms(mem, rid)
    # a new version of the reply (kept_terms) does not bring them back
    mem.set_access(BOB, rid, visibility="shared", allowed_users=["carol"])
    assert _found(mem, "zanzibar code") == []
    mem.restore(BOB, qid)
    assert set(_found(mem, "zanzibar code")) == {qid, rid}
    mem.forget(BOB, [qid])
    assert _found(mem, "zanzibar code") == []
    mem.restore(BOB, qid)
    assert set(_found(mem, "zanzibar code")) == {qid, rid}


def test_a_turn_after_a_deleted_question_is_not_indexed_under_it(mem: Memory) -> None:
    (q,) = mem.add_messages(S1, TURNS[:1])
    mem.delete(BOB, q.id)
    (r,) = mem.add_messages(S1, TURNS[1:])
    assert _found(mem, "zanzibar code") == []
    mem.restore(BOB, q.id)
    assert set(_found(mem, "zanzibar code")) == {q.id, r.id}


def test_a_purge_after_a_delete_leaves_nothing_either(mem: Memory) -> None:
    qid, rid = _turns(mem)
    mem.delete(BOB, qid)
    mem.purge(BOB, [qid])
    assert _found(mem, "zanzibar code") == [] and "zanzibar" not in _terms(mem, rid)
    assert rid in _found(mem, "4512")


def test_the_async_memory_moves_the_reply(url: str) -> None:
    async def main() -> None:
        async with AsyncMemory(url, embedder="hashing", background=False) as amem:
            q, r = await amem.add_messages(S1, TURNS)
            await amem.update(BOB, q.id, expected_version=q.version, content="the quokka pin?")
            hits = [h.id for h in await amem.search(BOB, "zanzibar", mode="lexical")]
            assert hits == []
            hits = [h.id for h in await amem.search(BOB, "quokka", mode="lexical")]
            assert set(hits) == {q.id, r.id}
            await amem.delete(BOB, q.id)
            assert await amem.search(BOB, "quokka", mode="lexical") == []

    asyncio.run(main())


def test_over_http_an_edit_and_a_delete_move_the_reply(served) -> None:  # noqa: F811
    qid, rid = _turns(served.memory)
    c = served.client
    bob = served.h(served.keys.create("acme", user="bob").secret)
    patch = {"expected_version": 1, "content": "what is the quokka pin?"}
    got = c.patch(f"/v1/users/bob/memories/{qid}", json=patch, headers=bob)
    assert got.status_code == 200, got.text

    def found(query: str) -> str:
        body = {"query": query, "mode": "lexical"}
        got = c.post("/v1/users/bob/search", json=body, headers=bob)
        assert got.status_code == 200, got.text
        return got.text

    assert rid not in found("zanzibar") and rid in found("quokka pin")
    got = c.delete(f"/v1/users/bob/memories/{qid}", headers=bob)
    assert got.status_code == 200, got.text
    assert rid not in found("quokka pin")


def test_with_the_redis_buffer_the_reply_moves_too(tmp_path, redis_buffer_url: str) -> None:  # type: ignore[no-untyped-def]
    """The Redis session buffer holds the turns, not their terms: the durable store's."""
    with Memory(
        f"sqlite:///{tmp_path / 'm.db'}",
        embedder="hashing",
        background=False,
        buffer=redis_buffer_url,
    ) as mem:
        qid, rid = _turns(mem)
        mem.update(BOB, qid, expected_version=1, content="what is the quokka pin?")
        assert set(_found(mem, "quokka pin")) == {qid, rid} and _found(mem, "zanzibar") == []
        mem.delete(BOB, qid)
        assert _found(mem, "quokka pin") == []
        mem.restore(BOB, qid)
        assert set(_found(mem, "quokka pin")) == {qid, rid}


def test_turns_out_of_time_order_follow_the_listed_order(mem: Memory) -> None:
    """A reply is indexed under the turn listed before it (by ``observed_at``): an
    ``add_messages`` call whose turns come out of time order, or that fills in an earlier
    time of the session (a backfill), indexes each turn under the one listed before it and
    re-indexes the stored turn that now follows a new one. Before, the turns of a call were
    indexed in the call's order: a reply placed before its question in time kept the
    question's words after the question was deleted (the delete re-terms the turn listed
    after the question)."""
    from datetime import UTC, datetime

    def at(h: int) -> datetime:
        return datetime(2026, 1, 1, h, tzinfo=UTC)

    # a call whose reply comes after its question but is dated before it
    q, a = mem.add_messages(
        S1,
        [
            {"role": "user", "content": "what is the zanzibar code?", "observed_at": at(10)},
            {"role": "assistant", "content": "It is 4512.", "observed_at": at(9)},
        ],
    )
    assert _found(mem, "zanzibar code") == [q.id]  # listed before the question: not under it
    # an append after the question, then a backfill between the two
    (r,) = mem.add_messages(S1, [{"role": "assistant", "content": "4513", "observed_at": at(11)}])
    assert set(_found(mem, "zanzibar code")) == {q.id, r.id}
    (b,) = mem.add_messages(
        S1, [{"role": "user", "content": "and the quokka pin?", "observed_at": at(10)}]
    )  # listed after q (same time, written later), before r
    assert set(_found(mem, "quokka pin")) == {b.id, r.id}
    assert set(_found(mem, "zanzibar code")) == {q.id, b.id}
    mem.delete(BOB, b.id)
    assert _found(mem, "quokka pin") == []
    assert _found(mem, "zanzibar code") == [q.id]
    mem.delete(BOB, q.id)
    assert _found(mem, "zanzibar code") == []
