"""What caller27's audit found outside its files, as strict xfails naming the file and the
fix (each passes once fixed; strict, so the fix is noticed)."""

from __future__ import annotations

import pytest

from memstrata import Memory, Scope

BOB = Scope("acme", "bob")


@pytest.mark.xfail(
    strict=True,
    reason="layers/base.py version_write(reindex=False) re-tokenizes the record's own text, "
    "dropping the question terms a reply was indexed under (search/reply_terms.py): after "
    "set_access (or any change that is not the text) the owner's search no longer finds the "
    "reply by the question's words. Fix: keep the stored terms when the text is unchanged. "
    "Beware when fixing: a caller may then match a shared reply on the words of an unshared "
    "question (an oracle); a caller's lexical match must then use the reply's own terms only.",
)
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
