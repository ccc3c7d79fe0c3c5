"""A caller's lexical scores weighed each term by the owner's whole index (the tenant's
statistics): the order of two shared hits told whether the owner's unshared records held a
word. carol, shown two notes of bob ("alpha ..." and "beta ..."), saw "beta" overtake
"alpha" when bob wrote private notes holding "alpha". A caller's search is now scored over
what the caller may read (``store/caller_bm25.py``), on every store. Fails before the fix
(the order flips, the scores move)."""

from __future__ import annotations

import asyncio

from memstrata import AsyncMemory, Memory, Scope

BOB = Scope("acme", "bob")
CAROL = BOB.as_caller("carol")


def _shared(mem: Memory, text: str) -> str:
    rec = mem.add(BOB, text)
    mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["carol"])
    return rec.id


def _seen(mem: Memory, query: str) -> list[tuple[str, float]]:
    return [(h.record.id, h.score) for h in mem.search(CAROL, query, mode="lexical")]


def test_unshared_words_do_not_move_a_callers_hits(mem: Memory) -> None:
    a = _shared(mem, "alpha harbour ferry")
    b = _shared(mem, "beta harbour ferry")
    mem.add(BOB, "an unrelated private note")
    before = _seen(mem, "alpha beta")
    assert [rid for rid, _ in before] == [a, b]  # equal weights: insertion order
    for i in range(4):
        mem.add(BOB, f"private alpha thoughts {i}")
    assert _seen(mem, "alpha beta") == before
    # the owner's own ranking does weigh his private notes: "beta" is rarer for him now
    owner = [h.record.id for h in mem.search(BOB, "alpha beta", mode="lexical")]
    assert owner.index(b) < owner.index(a)


def test_unshared_records_do_not_move_a_callers_scores(mem: Memory) -> None:
    """The number and length of the owner's unshared records (N, avgdl) do not show."""
    _shared(mem, "the ferry leaves at nine")
    _shared(mem, "a ferry and a harbour office by the ferry pier")
    before = _seen(mem, "ferry harbour")
    for i in range(5):
        mem.add(BOB, f"a long private note about many other things number {i} " * 3)
    assert _seen(mem, "ferry harbour") == before


def test_another_users_words_do_not_move_a_callers_hits(mem: Memory) -> None:
    """The tenant's other users' records counted too (the statistics were the tenant's)."""
    a = _shared(mem, "alpha harbour ferry")
    b = _shared(mem, "beta harbour ferry")
    before = _seen(mem, "alpha beta")
    for i in range(4):
        mem.add(Scope("acme", "dave"), f"alpha for dave {i}")
    assert _seen(mem, "alpha beta") == before
    assert [rid for rid, _ in before] == [a, b]


def test_a_caller_who_reads_everything_ranks_as_the_owner(mem: Memory) -> None:
    """Over a one-user tenant whose every record is shared, the caller's statistics are the
    owner's: the same hits in the same order (the lexical scores are BM25 of the same
    numbers; on SQLite and PostgreSQL bit for bit, memory:// ranks with bm25s)."""
    for text in ["alpha harbour", "beta ferry ferry", "alpha beta gamma", "gamma harbour pier"]:
        _shared(mem, text)
    for q in ["alpha", "ferry harbour", "alpha beta gamma"]:
        assert _seen(mem, q) == [(h.record.id, h.score) for h in mem.search(BOB, q, mode="lexical")]


def test_a_callers_filters_and_scope_still_apply(mem: Memory) -> None:
    a = _shared(mem, "alpha harbour ferry")
    mem.add(BOB, "alpha private")
    rec = mem.add(BOB, "alpha shared by tag", tags=["x"])
    mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["carol"])
    got = [h.record.id for h in mem.search(CAROL, "alpha", mode="lexical", filters={"tags": ["x"]})]
    assert got == [rec.id]
    assert {h.record.id for h in mem.search(CAROL, "alpha", mode="lexical")} == {a, rec.id}
    assert mem.search(BOB.as_caller("erin"), "alpha", mode="lexical") == []


def test_async_caller_scores_hold_no_unshared_words(url: str) -> None:
    async def run() -> None:
        async with AsyncMemory(url, embedder="hashing", background=False) as mem:
            recs = [await mem.add(BOB, t) for t in ("alpha harbour ferry", "beta harbour ferry")]
            for r in recs:
                await mem.set_access(BOB, r.id, visibility="shared", allowed_users=["carol"])
            hits = await mem.search(CAROL, "alpha beta", mode="lexical")
            seen = [(h.record.id, h.score) for h in hits]
            for i in range(4):
                await mem.add(BOB, f"private alpha thoughts {i}")
            after = await mem.search(CAROL, "alpha beta", mode="lexical")
            assert [(h.record.id, h.score) for h in after] == seen
            assert [rid for rid, _ in seen] == [r.id for r in recs]

    asyncio.run(run())


def test_every_way_of_sharing_is_searched(mem: Memory) -> None:
    """A caller's lexical search reads what is shared by name, by role and publicly, and
    not what was shared once and unshared since, nor a deleted record."""
    named = _shared(mem, "alpha by name")
    public = mem.add(BOB, "alpha for everyone")
    mem.set_access(BOB, public.id, visibility="public")
    role = mem.add(BOB, "alpha for editors")
    mem.set_access(BOB, role.id, visibility="shared", allowed_roles=["editor"])
    was = _shared(mem, "alpha once shared")
    mem.set_access(BOB, was, visibility="shared", allowed_users=[])
    gone = _shared(mem, "alpha deleted")
    mem.delete(BOB, gone)
    mem.add(BOB, "alpha private")

    def found(scope: Scope) -> set[str]:
        return {h.record.id for h in mem.search(scope, "alpha", mode="lexical")}

    assert found(CAROL) == {named, public.id}
    assert found(BOB.as_caller("carol", {"editor"})) == {named, public.id, role.id}
    assert found(BOB.as_caller("erin", {"editor"})) == {public.id, role.id}
