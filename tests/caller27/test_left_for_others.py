"""What caller27's audit found outside its files, as strict xfails naming the file and the
fix (each passes once fixed; strict, so the fix is noticed). Fixed by view27: a version
that keeps the text keeps the question terms a reply was indexed under
(``search/reply_terms.kept_terms``), and a caller matches a reply on its own words only
(``search/lexical.py``; ``tests/view27/test_reply_terms.py``)."""

from __future__ import annotations

from memstrata import Memory, Scope

BOB = Scope("acme", "bob")


def test_sharing_a_reply_keeps_its_question_terms(mem: Memory) -> None:
    s1 = BOB.with_session("s1")
    mem.add_messages(
        s1,
        [
            {"role": "user", "content": "what is the zanzibar code?"},
            {"role": "assistant", "content": "It is 4512."},
        ],
    )
    (reply,) = [r for r in mem.list(BOB) if r.role == "assistant"]
    found = [h.id for h in mem.search(BOB, "zanzibar code", mode="lexical")]
    assert reply.id in found  # indexed under the question
    mem.set_access(BOB, reply.id, visibility="shared", allowed_users=["carol"])
    assert reply.id in [h.id for h in mem.search(BOB, "zanzibar code", mode="lexical")]
