"""A caller's ``search(..., explain=True)`` showed each hit's raw BM25 score, which weighs a
term by the owner's whole index: carol watching the score of a note bob shared with her
learnt how many of bob's unshared records hold one of its words (the score halved when bob
wrote three private notes with it). Found by caller27's audit; a caller's explanation now
gives no raw BM25 (``lexical_bm25`` is ``None``; the ranks stay). The owner still sees it.
Fails before the fix. Left (README): the ranking among several shared hits still reflects
the owner's term statistics, more weakly."""

from __future__ import annotations

from memstrata import Memory, Scope

BOB = Scope("acme", "bob")
CAROL = BOB.as_caller("carol")


def _seen(mem: Memory, scope: Scope) -> tuple[object, ...]:
    (hit,) = mem.search(scope, "ferry", explain=True, mode="lexical")
    e = hit.explanation or {}
    return e["lexical_bm25"], e["lexical_rank"], hit.score


def test_a_callers_explanation_tells_nothing_of_unshared_records(mem: Memory) -> None:
    rec = mem.add(BOB, "the ferry leaves at nine")
    mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["carol"])
    for i in range(4):
        mem.add(BOB, f"unrelated private note {i}")
    before = _seen(mem, CAROL)
    for i in range(3):
        mem.add(BOB, f"private: my ferry to the clinic {i}")
    assert _seen(mem, CAROL) == before
    assert before[0] is None and before[1] == 1
    hits = mem.search(BOB, "ferry", explain=True, mode="lexical")
    assert all((h.explanation or {})["lexical_bm25"] for h in hits)  # the owner's own
